// kloop eval: A/B — both sides built and gated, then timed interleaved in one runner process.
#include "eval/ab_evaluation.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <stdexcept>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "eval/call_judgement.hpp"
#include "eval/candidate_integrity.hpp"
#include "eval/isolation_checks.hpp"
#include "eval/evaluator.hpp"
#include "eval/plan_builder.hpp"
#include "eval/runner_session.hpp"
#include "eval/sample_clock_facts.hpp"

namespace kloop::eval {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct side_checks {
    int total = 0;
    int failed = 0;
    std::string first_failure;
};

side_checks judge_checks(const runner::call_plan& plan, const json& checks) {
    side_checks c;
    for (const auto& chk : checks) {
        ++c.total;
        const auto verdict = judge_call(plan, chk);
        if (verdict.pass) continue;
        if (c.failed++ == 0)
            c.first_failure = describe_timed_check(chk) + ": " + verdict.reason;
    }
    return c;
}

std::string side_error(const char* side, const side_checks& c) {
    return std::string(side) + ": " + std::to_string(c.failed) + " of " + std::to_string(c.total) +
           " timed calls checked failed; first: " + c.first_failure;
}

// One bench item's ab_result (or its absence) → the shape's row.
ab_shape_result interpret_item(const runner::call_plan& plan, const runner::ab_result_event* result, bool started, const std::string& stage,
                               const std::string& runner_failure, const measure::ab_config& config) {
    ab_shape_result s;
    s.mode = plan.mode;
    s.shape = plan.shape;
    if (result == nullptr) {
        if (started)
            s.error = (runner_failure.empty() ? std::string("no result") : runner_failure) +
                      (stage == "warmup" ? " while warming up base and candidate" : " while timing base and candidate interleaved");
        else
            s.error = runner_failure.empty() ? "not run" : "not run: " + runner_failure;
        return s;
    }
    const runner::ab_result_event& e = *result;
    s.base_samples_s = e.base_samples_s;
    s.candidate_samples_s = e.candidate_samples_s;
    if (!s.base_samples_s.empty()) s.base_s = measure::summarize(s.base_samples_s);
    if (!s.candidate_samples_s.empty()) s.candidate_s = measure::summarize(s.candidate_samples_s);
    if (e.failure) {
        s.error = runner::describe_call_failure("the " + (e.failure->side.empty() ? std::string("?") : e.failure->side),
                                                *e.failure);
        return s;
    }
    s.base_stop_reason = e.base_stop_reason;
    s.candidate_stop_reason = e.candidate_stop_reason;
    if (e.early_verdict) s.early_verdict = *e.early_verdict;
    s.base_warnings = timing_warnings(s.base_samples_s, s.base_stop_reason, e.base_discarded_samples,
                                      clock_facts_of(e.base_sample_info));
    s.candidate_warnings = timing_warnings(s.candidate_samples_s, s.candidate_stop_reason,
                                           e.candidate_discarded_samples, clock_facts_of(e.candidate_sample_info));
    s.input_sets = e.input_sets;
    s.flush_bytes = e.flush_bytes;
    const auto base_checks = judge_checks(plan, e.base_checks);
    const auto cand_checks = judge_checks(plan, e.candidate_checks);
    s.base_checks_total = base_checks.total;
    s.base_checks_failed = base_checks.failed;
    s.candidate_checks_total = cand_checks.total;
    s.candidate_checks_failed = cand_checks.failed;
    if (cand_checks.failed > 0) s.error = side_error("candidate", cand_checks);
    if (base_checks.failed > 0) s.error += (s.error.empty() ? "" : "; ") + side_error("base", base_checks);
    if (!s.error.empty()) return s;
    if (s.base_samples_s.empty() || s.candidate_samples_s.empty()) {
        s.error = "no samples";
        return s;
    }
    try {
        s.verdict = measure::compare_samples(s.base_samples_s, s.candidate_samples_s, config);
    } catch (const std::invalid_argument& x) {
        s.error = x.what();
        return s;
    }
    s.ok = true;
    return s;
}

// census_time_vs_event of one side, again, with the A/B medians as the event times (the side's
// gate ran without a bench, so the check was skipped there): kernels its gate calls ran outside
// the timed window (a stream the end event does not wait for) reject the side as in verify.
void recheck_census_time(evaluation& ev, const std::vector<ab_shape_result>& shapes, std::uint64_t evict_bytes,
                         bool candidate_side) {
    if (ev.census.calls.empty()) return;
    std::vector<timed_shape> timed;
    for (const auto& s : shapes) {
        const auto& stats = candidate_side ? s.candidate_s : s.base_s;
        if (stats) timed.push_back({s.mode + "/" + s.shape, stats->median, s.bytes, s.flush_bytes});
    }
    for (auto& fresh : judge_gate_census(ev.census, event_proxies(timed, evict_bytes, ev.census.device_flush_bytes))) {
        if (fresh.name != "census_time_vs_event") continue;
        for (auto& c : ev.integrity)
            if (c.name == fresh.name) c = fresh;
        if (fresh.status == check_status::fail && ev.status == disposition::passed) {
            ev.status = disposition::gate_failed;
            ev.reason = "integrity check 'census_time_vs_event' failed: " + fresh.detail;
        }
    }
}

// The A/B's timer cross-check of one side replaces its evaluation's (skipped there: no bench);
// a fail rejects that side, since its times are not its calls'.
void hold_timer(evaluation& ev, const integrity_check& fresh) {
    bool found = false;
    for (auto& c : ev.integrity)
        if (c.name == fresh.name) c = fresh, found = true;
    if (!found) ev.integrity.push_back(fresh);
    if (fresh.status == check_status::fail && ev.status == disposition::passed) {
        ev.status = disposition::gate_failed;
        ev.reason = "integrity check 'timer_cross_check' failed: " + fresh.detail;
    }
}

// The A/B checks of one side replace its evaluation's "timed_output_checks" (skipped there:
// the evaluation ran without its own bench), and failing ones reject that side as the bench would.
void record_timed_checks(evaluation& ev, const std::vector<ab_shape_result>& shapes, bool candidate_side) {
    int total = 0, failed = 0;
    std::string first;
    for (const auto& s : shapes) {
        total += candidate_side ? s.candidate_checks_total : s.base_checks_total;
        const int f = candidate_side ? s.candidate_checks_failed : s.base_checks_failed;
        failed += f;
        if (f > 0 && first.empty()) first = s.mode + "/" + s.shape + " " + s.error;
    }
    const auto status = total == 0 ? check_status::warn : failed ? check_status::fail : check_status::pass;
    const auto detail = failed ? first
                               : std::to_string(total) +
                                     " timed calls with new inputs at the same addresses checked (A/B, interleaved)";
    bool replaced = false;
    for (auto& c : ev.integrity)
        if (c.name == "timed_output_checks") {
            c.status = status;
            c.detail = detail;
            replaced = true;
        }
    if (!replaced) ev.integrity.push_back({"timed_output_checks", status, detail});
    if (failed > 0 && ev.status == disposition::passed) {
        ev.status = disposition::gate_failed;
        ev.reason = "a timed call was rejected: " + first;
    }
}

void time_interleaved(const ab_context& ctx, const evaluation_options& options, ab_evaluation& r, std::uint64_t seed);

// The base, the candidate and the reference are built at once (each a compile, or for Python an
// interpreter probe that imports torch: ~4.5 s apiece on the H200 host), and the candidate's
// build goes on while the base is gated — in a loop iteration the base and the reference are
// cache hits, so the candidate's build is hidden behind the base's gate. The gates then find
// the libraries in the build cache, which locks each entry (flock), so two builds of one source
// never race. The gates and the timing stay one at a time: two gates at once would share the GPU
// and skew the census times they record; a build launches no kernel. A build that throws here
// is left to evaluate(), which reports it.
class prebuilds {
public:
    prebuilds(const evaluation_context& base_ctx, const evaluation_context& cand_ctx)
        : m_base(start(base_ctx, base_ctx.candidate, backend::source_role::candidate)),
          m_reference(start(base_ctx, base_ctx.spec.reference, backend::source_role::reference)),
          m_candidate(start(cand_ctx, cand_ctx.candidate, backend::source_role::candidate)) {}
    // Waits for the builds the base's evaluation needs.
    void wait_for_base() {
        m_base_record = take(m_base);
        m_reference_record = take(m_reference);
    }
    void wait_for_candidate() { m_candidate_record = take(m_candidate); }
    [[nodiscard]] const std::optional<backend::build_record>& base() const { return m_base_record; }
    [[nodiscard]] const std::optional<backend::build_record>& reference() const { return m_reference_record; }
    [[nodiscard]] const std::optional<backend::build_record>& candidate() const { return m_candidate_record; }

private:
    using pending = std::future<backend::build_record>;
    static pending start(const evaluation_context& c, const fs::path& source, backend::source_role role) {
        return std::async(std::launch::async, [&c, source, role] { return build_run_source(c, source, role); });
    }
    static std::optional<backend::build_record> take(pending& f) {
        if (!f.valid()) return std::nullopt;
        try {
            return f.get();
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    pending m_base, m_reference, m_candidate;
    std::optional<backend::build_record> m_base_record, m_reference_record, m_candidate_record;
};

// evaluate() found the prebuilt libraries in the cache: its record keeps the build's own time.
void credit_prebuild(build_summary& s, const std::optional<backend::build_record>& pre) {
    if (!pre || pre->cache_hit || !s.cache_hit || !pre->ok) return;
    s.cache_hit = false;
    s.wall_s = pre->wall_s;
}

// Why the side(s) not passed are not, joined by "; "; empty when both passed.
std::string red_sides(const ab_evaluation& r) {
    std::string why;
    for (const auto& [side, ev] : {std::pair<const char*, const evaluation*>{"base", &r.base}, {"candidate", &r.candidate}}) {
        if (ev->status == disposition::passed) continue;
        if (!why.empty()) why += "; ";
        why += ev->status == disposition::build_failed ? std::string("the ") + side + " failed to build"
                                                       : std::string("the ") + side + "'s gate is red: " + ev->reason;
    }
    return why;
}

}  // namespace

ab_evaluation compare_candidates(const ab_context& ctx) {
    if (const auto* own = backend::backend_for(ctx.spec).own_pipeline()) return own->compare(ctx);
    auto r = new_ab_evaluation(ctx);

    // Both sides: build and gate, never bench. One drawn seed for both, so both face the same trials.
    auto options = ctx.options;
    options.bench = false;
    if (!options.seed) options.seed = draw_seed();
    r.seed = *options.seed;
    fs::create_directories(ctx.scratch_dir / "base");
    fs::create_directories(ctx.scratch_dir / "candidate");
    prefixed_progress base_progress(options.progress, "base: "), cand_progress(options.progress, "new: ");
    auto base_options = options, cand_options = options;
    if (options.progress) base_options.progress = &base_progress, cand_options.progress = &cand_progress;
    const evaluation_context base_ctx{ctx.spec, ctx.base, base_options, ctx.commands, ctx.cache_dir,
                                      ctx.scratch_dir / "base"};
    const evaluation_context cand_ctx{ctx.spec, ctx.candidate, cand_options, ctx.commands, ctx.cache_dir,
                                      ctx.scratch_dir / "candidate"};
    prebuilds pre(base_ctx, cand_ctx);
    pre.wait_for_base();
    r.base = evaluate(base_ctx);  // the candidate's build goes on meanwhile
    pre.wait_for_candidate();
    r.candidate = evaluate(cand_ctx);
    credit_prebuild(r.base.candidate_build, pre.base());
    credit_prebuild(r.base.reference_build, pre.reference());
    credit_prebuild(r.candidate.candidate_build, pre.candidate());
    r.env = r.candidate.env;

    if (const std::string why = red_sides(r); !why.empty()) {
        r.reason = why + " (no timing without two green gates)";
        return r;
    }

    const auto device_of = [](const build_summary& b) { return b.device.empty() ? std::string("cpu") : b.device; };
    if (device_of(r.base.candidate_build) != device_of(r.candidate.candidate_build)) {
        r.reason = "the base runs on '" + device_of(r.base.candidate_build) + "' and the candidate on '" +
                   device_of(r.candidate.candidate_build) + "': one runner cannot time them side by side";
        return r;
    }
    time_interleaved(ctx, options, r, derive_seed(r.seed, "ab"));
    return r;
}

void judge_ab_physics(ab_evaluation& r, const physics_bounds_choice& bounds) {
    for (const bool candidate_side : {false, true}) {
        std::vector<physics_shape> shapes;
        for (const auto& s : r.shapes) {
            const auto& stats = candidate_side ? s.candidate_s : s.base_s;
            if (stats) shapes.push_back({s.mode, s.shape, stats->median, s.bytes, s.flops, s.written_bytes});
        }
        apply_physics_check(candidate_side ? r.candidate : r.base, physics_floor_check(shapes, bounds, "A/B medians: "));
    }
    // A side below the floor: its times are not its work's, so no verdict stands.
    if (std::string why = red_sides(r); !why.empty()) {
        r.ok = false;
        r.reason = std::move(why);
    }
}

ab_evaluation retime_candidates(const ab_context& ctx, const ab_evaluation& gated, int run) {
    if (const auto* own = backend::backend_for(ctx.spec).own_pipeline()) return own->retime(ctx, gated, run);
    if (!gated.timed) throw internal_error("retime_candidates: the pair was never timed (a red or unbuilt side)");
    ab_evaluation r = gated;
    r.shapes.clear();
    r.overall.reset();
    r.ok = false;
    r.reason.clear();
    r.runner_failure.clear();
    auto options = ctx.options;
    options.bench = false;
    options.seed = r.seed;
    time_interleaved(ctx, options, r, derive_seed(r.seed, run == 0 ? std::string("ab") : "ab-run-" + std::to_string(run)));
    return r;
}

namespace {

void time_interleaved(const ab_context& ctx, const evaluation_options& options, ab_evaluation& r, std::uint64_t seed) {
    // One runner, both libraries, interleaved.
    const std::string device =
        r.candidate.candidate_build.device.empty() ? std::string("cpu") : r.candidate.candidate_build.device;
    // As the bench: on a GPU, 0 means "2 x L2 of the device", which the runner flushes before every sample.
    // (A Python candidate with torch tensors on CUDA too: sizing its rotation by the host's LLC —
    // 300 MiB on the H200 host — made the worker generate several 128M-element sets per shape.)
    const bool on_gpu = backend::backend_for(ctx.spec).timed_on_gpu(r.candidate.candidate_build);
    r.evict_bytes = options.evict_bytes ? options.evict_bytes : on_gpu ? 0 : 2 * r.candidate.env.llc_bytes;
    auto job = build_bench_job(ctx.spec, options, seed, r.evict_bytes);
    job.candidate_device = device;
    job.reference_device = r.candidate.reference_build.device.empty() ? std::string("cpu") : r.candidate.reference_build.device;
    job.phase = runner::job_phase::ab;
    for (auto& item : job.bench) item.early_verdict = measure::early_verdict_for(r.config, item.stop.min_time_s);
    job.candidate_lib = r.candidate.candidate_build.library;
    job.base_lib = r.base.candidate_build.library;
    job.reference_lib = r.candidate.reference_build.library;
    job.candidate_sha256 = r.candidate.candidate_build.library_sha256;
    job.base_sha256 = r.base.candidate_build.library_sha256;
    job.reference_sha256 = r.candidate.reference_build.library_sha256;
    const double timeout = ctx.spec.runner_timeout_s(options.timeout_s) +
                           static_cast<double>(job.bench.size()) * (2 * options.stop.max_time_s + 60.0);
    platform::host_load_sampler load;  // other work on the machine while it times
    const auto session = run_runner(backend::backend_for(ctx.spec), job, ctx.scratch_dir, timeout, ctx.commands, {},
                                    options.max_output_bytes, options.max_memory_bytes, options.progress);
    r.host_load = load.stop();
    r.warnings = measure::busy_machine_warning(r.host_load.busy(), r.host_load.describe());
    if (session.process.interrupted) throw error(exit_code::interrupted, "interrupted");
    r.timed = true;
    r.runner_failure = session.describe_failure();
    r.timing_wall_s = session.process.wall_s;

    std::map<int, const runner::ab_result_event*> results;
    std::map<int, std::string> stage;
    for (const auto& e : session.events) {
        if (const auto* x = std::get_if<runner::ab_result_event>(&e)) results[x->id] = x;
        else if (const auto* st = std::get_if<runner::item_start_event>(&e)) stage[st->id] = "start";
        else if (const auto* g = std::get_if<runner::stage_event>(&e)) stage[g->id] = g->stage;
    }
    bool all_ok = true;
    for (const auto& item : job.bench) {
        const auto& plan = job.calls[static_cast<std::size_t>(item.call)];
        const auto it = results.find(item.id);
        const auto st = stage.find(item.id);
        auto row = interpret_item(plan, it == results.end() ? nullptr : it->second, st != stage.end(),
                                  st == stage.end() ? "" : st->second, r.runner_failure, r.config);
        const auto cost = spec_cost(ctx.spec, plan);
        row.bytes = cost.bytes;
        row.flops = cost.flops;
        row.written_bytes = written_bytes_of(plan);
        all_ok = all_ok && row.ok;
        r.shapes.push_back(std::move(row));
    }
    record_timed_checks(r.base, r.shapes, false);
    record_timed_checks(r.candidate, r.shapes, true);
    recheck_census_time(r.base, r.shapes, r.evict_bytes, false);
    recheck_census_time(r.candidate, r.shapes, r.evict_bytes, true);
    const auto isolation = session_isolation(session.events);
    for (auto [ev, side] : {std::pair<evaluation*, const char*>{&r.base, "base"}, {&r.candidate, "candidate"}}) {
        ev->isolation = merge_isolation(ev->isolation, isolation);
        hold_timer(*ev, timer_cross_check(job, session.events, side));
        for (auto& c : ev->integrity)
            if (c.name == "isolation") c = isolation_check(ev->isolation);
    }
    judge_ab_physics(r, physics_bounds_from_events(session.events, r.candidate.env));

    std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs;
    for (const auto& s : r.shapes)
        if (s.ok) pairs.emplace_back(s.base_samples_s, s.candidate_samples_s);
    if (!pairs.empty()) r.overall = measure::combine_geomean(pairs, r.config);

    r.ok = all_ok && session.finished && !r.shapes.empty();
    if (!r.ok) {
        for (const auto& s : r.shapes)
            if (!s.ok) {
                r.reason = s.mode + "/" + s.shape + ": " + s.error;
                break;
            }
        if (r.reason.empty()) r.reason = r.runner_failure.empty() ? "the A/B runner did not finish" : r.runner_failure;
    }
    // A side the census recheck rejected: its times are not its work's, so no verdict stands.
    if (std::string why = red_sides(r); !why.empty()) {
        r.ok = false;
        r.reason = std::move(why);
    }
}

}  // namespace

}  // namespace kloop::eval
