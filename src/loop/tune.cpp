// kloop loop: `kloop tune` (see tune.hpp).
#include "loop/tune.hpp"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "eval/ab_evaluation.hpp"
#include "eval/evaluator.hpp"
#include "eval/visible_devices.hpp"
#include "loop/loop_session.hpp"
#include "loop/record/classification.hpp"
#include "loop/record/contract.hpp"
#include "loop/tune_memory.hpp"
#include "loop/tune_slurm.hpp"
#include "loop/tunables.hpp"
#include "platform/device_pool.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/utc_time.hpp"
#include "report/tune_table.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;

namespace {

// The first line of a compiler's diagnostics (or all of a short reason).
std::string first_line(const std::string& s) {
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

// Builds and races variants of one candidate: per lane, the incumbent in one copy of its sources
// and the point under test in the other, so every point of a lane builds at the same path (lane 0:
// <scratch>/incumbent and <scratch>/variant, as on one device; lane i: <scratch>/lane-i/…). A
// batch's races run on the device slots (platform/device_pool), one race per slot at a time.
// With a Slurm engine, a batch's races are the tasks of one job array instead (loop/tune_slurm):
// each lane's sources are copied into the batch's directory under the tune's shared one.
class compare_evaluator final : public tune_evaluator {
public:
    compare_evaluator(const spec::op_spec& spec, const std::string& text, const std::vector<tunable>& tunables,
                      const backend::local_sources& sources, const fs::path& scratch, eval::evaluation_options options,
                      measure::ab_config ab, platform::command_runner_base& runner,
                      std::vector<platform::device_slot> slots, std::optional<tune_slurm_engine> slurm)
        : m_spec(spec), m_text(text), m_tunables(tunables), m_sources(sources), m_file(sources.files.front()),
          m_scratch(scratch), m_options(std::move(options)), m_ab(ab), m_runner(runner), m_slots(std::move(slots)),
          m_slurm(std::move(slurm)) {
        if (m_slots.size() > 1) m_options.progress = nullptr;  // one display, many threads
    }

    std::size_t lanes() const override { return m_slurm ? std::max<std::size_t>(1, m_slurm->batch) : m_slots.size(); }

    std::vector<race_outcome> race_batch(const tune_config& incumbent,
                                         const std::vector<std::pair<tune_config, std::size_t>>& points) override {
        if (!m_slurm) return tune_evaluator::race_batch(incumbent, points);
        const fs::path dir = m_slurm->options.state_dir / fmt::format("batch-{}", m_batches++);
        std::vector<slurm_race> races;
        for (const auto& [config, lane] : points) {
            const fs::path at = dir / fmt::format("lane-{}", lane);
            backend::copy_local_sources(m_sources, at / "incumbent");
            backend::copy_local_sources(m_sources, at / "variant");
            races.push_back({write(at / "incumbent", incumbent), write(at / "variant", config)});
        }
        auto options = m_slurm->options;
        options.state_dir = dir;
        const auto out = race_batch_on_slurm(m_spec.spec_file, races, m_slurm->forwarded, options, m_runner);
        if (out.resumed && m_slurm->on_resume) m_slurm->on_resume(out.job_ids.front());
        std::vector<race_outcome> results;
        for (std::size_t j = 0; j < points.size(); ++j) {
            const auto& x = out.races[j];
            if (!x.ab)
                throw error(exit_code::gate_red,
                            fmt::format("the Slurm task racing {} against {} ({}): {}. The same command resumes the tune "
                                        "from its directory",
                                        describe_config(m_tunables, points[j].first),
                                        describe_config(m_tunables, incumbent), x.device, x.missing));
            auto r = judged(*x.ab, incumbent);
            r.device = x.device;
            results.push_back(std::move(r));
        }
        return results;
    }

    void in_parallel(std::size_t n, const std::function<void(std::size_t)>& job) override {
        platform::run_on_devices(m_slots, n, m_runner,
                                 [&](std::size_t i, const platform::device_slot& slot, platform::command_runner_base& bound) {
                                     const lane_binding bind(&bound, slot.label);
                                     job(i);
                                 });
    }

    point_build build(const tune_config& config, std::size_t lane) override {
        const fs::path source = write(variant_dir(lane), config);
        const eval::evaluation_context ctx{m_spec, source, m_options, runner(), platform::cache_dir(), next_run_dir()};
        const auto built = eval::build_run_source(ctx, source, backend::source_role::candidate);
        if (!built.ok) return {false, "", first_line(built.diagnostics)};
        // A backend that builds no library (Python): the snapshot's bytes are what would run.
        const std::string identity = !built.library_sha256.empty()
                                         ? built.library_sha256
                                         : backend::local_sources_sha256(eval::candidate_sources(m_spec, source));
        return {true, identity, ""};
    }

    race_outcome race(const tune_config& incumbent, const tune_config& candidate, std::size_t lane) override {
        const fs::path base = write(incumbent_dir(lane), incumbent);
        const fs::path cand = write(variant_dir(lane), candidate);
        const eval::ab_context ctx{m_spec, base, cand, m_options, m_ab, runner(), platform::cache_dir(), next_run_dir()};
        auto r = judged(eval::compare_candidates(ctx), incumbent);
        r.device = t_slot != nullptr ? *t_slot : m_slots.front().label;
        if (m_slots.size() == 1 && m_slots.front().id.empty()) r.device.clear();  // one unbound slot: as always
        return r;
    }

private:
    // A race's A/B as the search sees it; the incumbent failing its gate stops the tune.
    race_outcome judged(const eval::ab_evaluation& ab, const tune_config& incumbent) const {
        if (!(ab.base.status == eval::disposition::passed && ab.base.gate.pass))
            throw error(exit_code::gate_red,
                        fmt::format("the incumbent ({}) failed its gate in a race: {}. A flaky candidate cannot be "
                                    "tuned; make it pass `kloop verify` first",
                                    describe_config(m_tunables, incumbent), rejection_reason_of(ab.base)));
        const auto cls = classify(ab, describe_config(m_tunables, incumbent));
        race_outcome r;
        r.overall = cls.overall;
        if (cls.status == iteration_status::rejected) {
            r.status = cls.kind == rejection_kind::build ? tune_point_status::build_failed : tune_point_status::red;
            r.reason = cls.reason;
        } else
            r.status = cls.status == iteration_status::positive ? tune_point_status::faster : tune_point_status::not_faster;
        return r;
    }

    // The runner and slot of the job this thread runs (in_parallel), for its build and its race.
    inline static thread_local platform::command_runner_base* t_runner = nullptr;
    inline static thread_local const std::string* t_slot = nullptr;
    struct lane_binding {
        lane_binding(platform::command_runner_base* r, const std::string& slot) {
            t_runner = r;
            t_slot = &slot;
        }
        ~lane_binding() {
            t_runner = nullptr;
            t_slot = nullptr;
        }
        lane_binding(const lane_binding&) = delete;
        lane_binding& operator=(const lane_binding&) = delete;
    };
    platform::command_runner_base& runner() const { return t_runner != nullptr ? *t_runner : m_runner; }

    fs::path lane_dir(std::size_t lane) const { return lane == 0 ? m_scratch : m_scratch / fmt::format("lane-{}", lane); }
    fs::path incumbent_dir(std::size_t lane) const { return lane_dir(lane) / "incumbent"; }
    fs::path variant_dir(std::size_t lane) const { return lane_dir(lane) / "variant"; }
    fs::path write(const fs::path& dir, const tune_config& config) {
        const fs::path path = dir / m_file;
        platform::write_file_atomic(path, write_variant(m_text, m_tunables, config));
        return path;
    }
    fs::path next_run_dir() {
        const fs::path dir = m_scratch / "runs" / std::to_string(++m_runs);
        platform::ensure_directory(dir);
        return dir;
    }

    const spec::op_spec& m_spec;
    const std::string& m_text;
    const std::vector<tunable>& m_tunables;
    const backend::local_sources& m_sources;
    fs::path m_file;
    fs::path m_scratch;
    eval::evaluation_options m_options;
    measure::ab_config m_ab;
    platform::command_runner_base& m_runner;
    std::vector<platform::device_slot> m_slots;
    std::optional<tune_slurm_engine> m_slurm;
    int m_batches = 0;
    std::atomic<int> m_runs{0};
};

tune_point_row row_of(const loop_session& s, const std::string& tune_id, int iteration, const fs::path& candidate,
                      const std::vector<tunable>& tunables, const tune_point& p) {
    tune_point_row row;
    row.tune_id = tune_id;
    row.point = p.index;
    row.run_id = s.c.run_id;
    row.iteration = iteration;
    row.key = s.key();
    row.candidate = candidate.string();
    row.config_json = config_json(tunables, p.config);
    row.status = to_string(p.status);
    row.reason = p.reason;
    if (p.verdict) {
        row.speedup = p.verdict->speedup;
        row.ci_low = p.verdict->ci_low;
        row.ci_high = p.verdict->ci_high;
    }
    row.recorded_at = platform::utc_now_iso8601();
    return row;
}

}  // namespace

std::string tune_table_name(int iteration) { return "tune_" + version_label(iteration) + ".md"; }

std::string tune_proposal_md(const tune_result& r) {
    std::vector<std::string> changed;
    for (std::size_t k = 0; k < r.names.size() && k < r.best.size() && k < r.start.size(); ++k)
        if (r.best[k] != r.start[k]) changed.push_back(r.names[k]);
    std::string s = fmt::format("Direction: parameter search over {} ({} points, {}): chose {}\n", fmt::join(r.names, ", "),
                                r.points.size(), r.search, r.best_label);
    if (changed.empty() || !r.best_vs_start) {
        s += fmt::format("Expected: no change: no other point of the search was FASTER than the declared values ({})\n",
                         r.start_label);
        s += "Prediction: no change\n";
    } else {
        const auto& v = *r.best_vs_start;
        s += fmt::format("Expected: {} over the declared values ({}), as the tune's interleaved race measured it\n",
                         report::speedup_text(v), r.start_label);
        s += fmt::format("Prediction: speedup {:.3f}-{:.3f}\n", v.ci_low, v.ci_high);
    }
    s += "\nWritten by `kloop tune`: every point of the search is in tune_vN.md beside this iteration.\n";
    s += "\n## Strategy tags\n- parameter-tuning\n";
    for (const auto& name : changed) s += "- " + name + "\n";
    return s;
}

tune_outcome run_tune(const tune_request& req, platform::command_runner_base& runner) {
    tune_outcome out;
    record_origin origin{req.command_line, {}};
    auto session = open_session(req.workspace, access::write, origin);
    refuse_past_cap(session);
    const auto& c = session.c;
    const int iteration = static_cast<int>(session.records.size());
    const fs::path candidate = fs::absolute(req.candidate.value_or(c.candidate)).lexically_normal();
    if (!fs::is_regular_file(candidate)) throw usage_error("option --candidate '" + candidate.string() + "': no such file");
    const std::string text = platform::read_file(candidate);
    const auto tunables = parse_tunables(text, candidate);
    if (tunables.empty())
        throw usage_error(fmt::format("'{}' declares no tunables: mark a compile-time value with a `kloop:tune` comment "
                                      "and its value set (docs/loop.md, \"kloop tune\")",
                                      candidate.string()));

    const auto spec = load_spec(c);
    const auto sources = eval::candidate_sources(spec, candidate);
    if (req.slurm && req.devices != "1")
        throw usage_error("options --slurm and --devices exclude each other: Slurm places the races");
    const auto slots = req.slurm ? std::vector<platform::device_slot>{platform::device_slot{"", "default"}}
                                 : eval::visible_devices(spec, req.devices, runner);
    platform::scoped_temp_dir scratch("kloop-tune");
    compare_evaluator evaluator(spec, text, tunables, sources, scratch.path(), contract_options(c, req.options), req.ab,
                                runner, slots, req.slurm);
    for (std::size_t lane = 0; lane < evaluator.lanes(); ++lane) {
        const fs::path dir = lane == 0 ? scratch.path() : scratch.path() / fmt::format("lane-{}", lane);
        backend::copy_local_sources(sources, dir / "incumbent");
        backend::copy_local_sources(sources, dir / "variant");
    }

    out.tune_id = fmt::format("{}-{}", platform::utc_now_iso8601(), ::getpid());
    tune_memory memory(req.memory_db);
    const auto on_point = [&](const tune_point& p) {
        memory.record(row_of(session, out.tune_id, iteration, candidate, tunables, p));
        if (req.on_point) req.on_point(p);
    };
    out.search = run_tune_search(tunables, req.search, evaluator, on_point);
    out.search.batch = evaluator.lanes();
    if (req.slurm) out.search.engine = "slurm";
    else if (slots.size() > 1 || !slots.front().id.empty())
        for (const auto& slot : slots) out.search.devices.push_back(slot.label);

    out.table = session.ws.root() / tune_table_name(iteration);
    report::tune_page_context page{c.op, candidate.string(), version_label(iteration), ""};
    if (out.search.interrupted) {
        platform::write_file_atomic(out.table, report::tune_page_md(out.search, page));
        throw error(exit_code::interrupted,
                    fmt::format("interrupted: {} point(s) recorded in {} and the strategy memory; no iteration was "
                                "submitted and the candidate file is unchanged",
                                out.search.points.size(), out.table.string()));
    }
    page.outcome = "submitted; its A/B against the loop's best decides";
    platform::write_file_atomic(out.table, report::tune_page_md(out.search, page));

    // The end: the chosen configuration's source, submitted as one iteration under the same lock.
    platform::write_file_atomic(candidate, write_variant(text, tunables, out.search.best));
    const fs::path proposal = scratch.path() / "optimization_proposal.md";
    platform::write_file_atomic(proposal, tune_proposal_md(out.search));
    iterate_request ir;
    ir.workspace = req.workspace;
    ir.candidate = candidate;
    ir.proposal = proposal;
    ir.options = req.options;
    ir.ab = req.ab;
    ir.command_line = req.command_line;
    ir.memory_db = req.memory_db;
    ir.profile = req.profile;
    ir.allow_unconfined = req.allow_unconfined;
    ir.require_quiet = req.require_quiet;
    ir.held_lock = session.lock;
    out.iteration = run_iteration(ir, runner);
    const auto& r = out.iteration.record;
    page.outcome = to_string(r.status) + " — " + r.reason;
    platform::write_file_atomic(out.table, report::tune_page_md(out.search, page));
    return out;
}

}  // namespace kloop::loop
