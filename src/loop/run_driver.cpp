// kloop loop: `kloop run` — the loop driven unattended by a proposer (see run_driver.hpp).
#include "loop/run_driver.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <system_error>
#include <utility>
#include <vector>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "loop/context_bundle.hpp"
#include "loop/loop_session.hpp"
#include "loop/run_journal.hpp"
#include "loop/workspace_digest.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/utc_time.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kloop::loop {

namespace {

using say_fn = std::function<void(const std::string&)>;

// The frozen files lose their write permission while the proposer runs (an editor or a script
// that tries to write one fails at once) and get their modes back after. The modes are saved in
// run/frozen_modes.json first, so a run killed meanwhile gives them back when the next one starts.
class read_only_frozen_files {
public:
    read_only_frozen_files(const workspace& ws, const contract& c, const record_origin& origin)
        : m_file(run_dir(ws) / "frozen_modes.json") {
        json modes = json::array();
        for (const auto& f : c.frozen) {
            const fs::path p = c.op_dir / f.path;
            std::error_code ec;
            const auto st = fs::status(p, ec);
            if (ec || !fs::is_regular_file(st)) continue;
            modes.push_back({{"path", p.string()}, {"mode", static_cast<unsigned>(st.permissions())}});
        }
        write_record(m_file, "kloop.frozen_modes", {{"files", modes}}, origin);
        for (const auto& m : modes)
            fs::permissions(m.at("path").get<std::string>(),
                            fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                            fs::perm_options::remove, m_ec);
    }
    ~read_only_frozen_files() { restore(m_file); }
    read_only_frozen_files(const read_only_frozen_files&) = delete;
    read_only_frozen_files& operator=(const read_only_frozen_files&) = delete;

    // Gives back the modes a file of saved modes holds, and removes it; nothing when absent.
    static void restore(const fs::path& file) {
        if (!fs::exists(file)) return;
        try {
            const auto saved = read_record(file, "kloop.frozen_modes");
            for (const auto& m : saved.at("files")) {
                std::error_code ec;
                fs::permissions(m.at("path").get<std::string>(), static_cast<fs::perms>(m.at("mode").get<unsigned>()),
                                fs::perm_options::replace, ec);
            }
        } catch (const std::exception&) {
            // A malformed file of modes: the files keep the modes they have; the file goes.
        }
        std::error_code ec;
        fs::remove(file, ec);
    }

private:
    fs::path m_file;
    std::error_code m_ec;
};

// Puts version n's sources (its candidate file and local files) back at the kernel file's place.
void put_back_version(const loop_session& s, int n) {
    const auto dir = s.ws.iteration_dir(n);
    const auto& r = s.records[static_cast<std::size_t>(n)];
    const fs::path root = s.c.candidate.parent_path();
    fs::copy_file(dir / r.candidate_file, s.c.candidate, fs::copy_options::overwrite_existing);
    for (const auto& f : r.local_files) {
        fs::create_directories((root / f).parent_path());
        fs::copy_file(dir / f, root / f, fs::copy_options::overwrite_existing);
    }
}

// Sources at the kernel file's place that no iteration recorded (someone's unfinished edit) are
// copied under run/ before the best version replaces them: the run loses nothing.
void save_unrecorded_sources(const loop_session& s, const spec::op_spec& spec, const fs::path& to, const say_fn& say) {
    if (!fs::is_regular_file(s.c.candidate)) return;
    backend::local_sources src;
    try {
        src = eval::candidate_sources(spec, s.c.candidate);
    } catch (const error&) {
        src = {s.c.candidate.parent_path(), {s.c.candidate.filename()}};
    }
    const auto sha = backend::local_sources_sha256(src);
    for (const auto& r : s.records)
        if (r.sources_sha256 == sha || (r.local_files.empty() && r.candidate_sha256 == platform::sha256_file(s.c.candidate)))
            return;
    backend::copy_local_sources(src, to);
    say(fmt::format("saved the kernel file's unrecorded sources to {} before putting the best version back", to.string()));
}

std::optional<std::string> stop_reason(const loop_status& st, const run_request& req, int iterations_this_run) {
    if (st.next == next_step::stop_cap) return fmt::format("the iteration cap ({}) is reached", st.max_iterations);
    if (st.next == next_step::stop_target)
        return std::string("the target speedup looks reached (an estimate from separate runs): `kloop report` measures "
                           "it side by side");
    if (req.iterations && iterations_this_run >= *req.iterations)
        return fmt::format("this run's {} iteration(s) are done (--iterations)", *req.iterations);
    if (st.since_improvement >= req.max_stall)
        return fmt::format("{} iterations without improvement (--max-stall {})", st.since_improvement, req.max_stall);
    return std::nullopt;
}

class driver {
public:
    driver(const run_request& req, platform::command_runner_base& runner, const say_fn& say)
        : m_req(req), m_runner(runner), m_say(say), m_ws(req.iterate.workspace),
          m_lock(std::make_shared<workspace_lock>(m_ws)), m_origin{req.iterate.command_line, {}},
          m_journal(read_journal(m_ws)) {
        m_iterate = req.iterate;
        m_iterate.held_lock = m_lock;
        m_iterate.require_prediction = true;
        m_iterate.enforce_blocked = true;
    }

    run_outcome run() {
        read_only_frozen_files::restore(run_dir(m_ws) / "frozen_modes.json");
        m_journal.ended.clear();
        m_journal.ended_at.clear();
        resume();
        for (;;) {
            if (platform::interrupt_requested()) end_interrupted(nullptr);
            auto s = session();
            strategy_memory memory(m_req.iterate.memory_db);
            reconcile_memory(s, memory);
            m_out.status = compute_status(s.records, s.c.max_iterations, s.c.target_speedup);
            if (auto why = stop_reason(m_out.status, m_req, m_out.iterations)) return end(*why);
            if (m_failures >= m_req.max_failures) {
                m_out.proposer_failed = true;
                return end(fmt::format("{} attempts in a row failed or were refused (--max-failures {})", m_failures,
                                       m_req.max_failures));
            }
            attempt(s, memory);
            if (m_done) return end("the proposer has nothing more to propose");
        }
    }

private:
    loop_session session() { return open_session(m_ws.root(), access::read, m_origin, m_lock); }
    void save() { write_journal(m_ws, m_journal, m_origin); }

    run_outcome end(const std::string& why) {
        m_out.ended = why;
        m_journal.ended = why;
        m_journal.ended_at = platform::utc_now_iso8601();
        save();
        m_say("run ended: " + why);
        return m_out;
    }

    [[noreturn]] void end_interrupted(run_attempt* a) {
        if (a != nullptr) {
            a->phase = attempt_phase::interrupted;
            a->reason = "the run was interrupted while the proposer ran";
            a->ended_at = platform::utc_now_iso8601();
        }
        m_journal.ended = "interrupted";
        m_journal.ended_at = platform::utc_now_iso8601();
        save();
        throw error(exit_code::interrupted, "interrupted: the run's journal is in " + journal_file(m_ws).string() +
                                                "; `kloop run` again resumes it");
    }

    // An attempt a killed run left half done.
    void resume() {
        if (m_journal.attempts.empty()) return;
        auto& a = m_journal.attempts.back();
        if (a.phase == attempt_phase::proposing) {
            a.phase = attempt_phase::interrupted;
            a.reason = "kloop stopped while the proposer ran; the next attempt asks again";
            a.ended_at = platform::utc_now_iso8601();
            save();
            m_say(fmt::format("attempt {}: interrupted by the end of an earlier run; asking again", a.number));
        } else if (a.phase == attempt_phase::submitted) {
            const auto s = session();
            if (static_cast<int>(s.records.size()) > a.iteration) {
                record_iterated(a, s.records[static_cast<std::size_t>(a.iteration)]);
                save();
                m_say(fmt::format("attempt {}: its iteration {} was recorded before the earlier run ended", a.number,
                                  version_label(a.iteration)));
            } else {
                m_say(fmt::format("attempt {}: the earlier run ended in its iteration; submitting its saved candidate again",
                                  a.number));
                const auto saved = attempt_dir(m_ws, a.number) / "submitted";
                for (const auto& e : fs::recursive_directory_iterator(saved)) {
                    if (!e.is_regular_file() || e.path().filename() == "optimization_proposal.md") continue;
                    const auto to = s.c.candidate.parent_path() / e.path().lexically_relative(saved);
                    fs::create_directories(to.parent_path());
                    fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing);
                }
                submit(a, s.c);
            }
        }
    }

    void record_iterated(run_attempt& a, const iteration_record& r) {
        a.phase = attempt_phase::iterated;
        a.iteration_status = to_string(r.status);
        a.reason = fmt::format("{}: {} — {}", version_label(r.number), to_string(r.status), r.reason);
        a.ended_at = platform::utc_now_iso8601();
    }

    // Hands the kernel file and the saved proposal to run_iteration.
    void submit(run_attempt& a, const contract& c) {
        auto req = m_iterate;
        req.candidate = c.candidate;
        req.proposal = attempt_dir(m_ws, a.number) / "submitted" / "optimization_proposal.md";
        try {
            const auto o = run_iteration(req, m_runner);
            record_iterated(a, o.record);
            ++m_out.iterations;
            m_failures = 0;
            save();
            m_say(fmt::format("attempt {}: {}", a.number, a.reason));
            for (const auto& w : o.record.warnings) m_say("  warning: " + w);
        } catch (const usage_error& e) {
            refuse(a, e.what());
        }
    }

    void refuse(run_attempt& a, const std::string& why) {
        a.phase = attempt_phase::refused;
        a.reason = why;
        a.ended_at = platform::utc_now_iso8601();
        ++m_failures;
        save();
        m_say(fmt::format("attempt {}: refused — {}", a.number, why));
    }

    void fail(run_attempt& a, const std::string& why) {
        a.phase = attempt_phase::failed;
        a.reason = why;
        a.ended_at = platform::utc_now_iso8601();
        ++m_failures;
        save();
        m_say(fmt::format("attempt {}: failed — {}", a.number, why));
    }

    void attempt(loop_session& s, strategy_memory& memory) {
        ++m_out.attempts;
        const std::size_t index = m_journal.attempts.size();
        auto& a = m_journal.add(m_out.status.iterations + 1, platform::utc_now_iso8601());
        const run_attempt* previous = nullptr;
        if (index > 0 && (m_journal.attempts[index - 1].phase == attempt_phase::failed ||
                          m_journal.attempts[index - 1].phase == attempt_phase::refused))
            previous = &m_journal.attempts[index - 1];
        const fs::path dir = attempt_dir(m_ws, a.number);
        fs::create_directories(dir);
        const fs::path proposal = dir / "optimization_proposal.md";
        const auto spec = load_spec(s.c);
        const int best = m_out.status.best.value_or(0);
        save_unrecorded_sources(s, spec, dir / "unrecorded", m_say);
        put_back_version(s, best);
        const auto fps = memory.summarise(s.key());
        write_context_bundle({s, m_out.status, fps, a, previous, s.c.candidate, proposal, m_req.proposer_timeout_s},
                             dir / "context");
        save();

        const auto before = digest_workspace(m_ws.root(), {dir});
        proposer_outcome po;
        {
            read_only_frozen_files frozen(m_ws, s.c, m_origin);
            po = run_proposer({m_req.proposer, s.c.candidate.parent_path(), m_ws.root(), dir, dir / "context", s.c.candidate,
                               proposal, a.number, a.iteration, m_req.proposer_timeout_s, m_req.max_log_bytes},
                              m_runner);
        }
        a.proposer = po.how;
        a.proposer_wall_s = po.wall_s;
        if (const auto changes = digest_changes(before, digest_workspace(m_ws.root(), {dir})); !changes.empty()) {
            a.phase = attempt_phase::tampered;
            a.reason = fmt::format("the proposer changed the workspace: {}", fmt::join(changes, ", "));
            a.ended_at = platform::utc_now_iso8601();
            m_journal.ended = a.reason;
            save();
            throw contract_error(fmt::format("attempt {}: {}. The run ends: the workspace's records are kloop's alone to "
                                             "write; check them (git status in the workspace's repository, the iteration "
                                             "directories) before any further command",
                                             a.number, a.reason));
        }
        try {
            (void)session();  // re-hashes every frozen file
        } catch (const contract_error& e) {
            a.phase = attempt_phase::tampered;
            a.reason = std::string("the proposer changed a frozen file: ") + e.what();
            a.ended_at = platform::utc_now_iso8601();
            m_journal.ended = a.reason;
            save();
            throw;
        }
        // The loop's own rows in the shared memory come from its records, whatever happened to them.
        for (const auto& r : s.records) memory.record(memory_row_of(s, r));

        if (po.end == proposer_end::interrupted) end_interrupted(&a);
        if (po.end == proposer_end::done) {
            a.phase = attempt_phase::done;
            a.reason = "the proposer has nothing more to propose";
            a.ended_at = platform::utc_now_iso8601();
            m_done = true;
            save();
            return;
        }
        if (po.end == proposer_end::failed)
            return fail(a, "the proposer " + po.how +
                               (po.stderr_tail.empty() ? std::string() : "; its stderr ends: " + po.stderr_tail));
        if (!fs::is_regular_file(proposal))
            return fail(a, "the proposer exited 0 but wrote no proposal at " + proposal.string() + " (KLOOP_PROPOSAL)");
        if (!fs::is_regular_file(s.c.candidate))
            return fail(a, "the proposer removed the kernel file " + s.c.candidate.string());
        backend::local_sources sources;
        try {
            sources = eval::candidate_sources(spec, s.c.candidate);
        } catch (const usage_error& e) {
            return refuse(a, e.what());
        }
        if (backend::local_sources_sha256(sources) == s.records[static_cast<std::size_t>(best)].sources_sha256)
            return refuse(a, fmt::format("the kernel file is {} unchanged: an attempt must change it", version_label(best)));
        const fs::path saved = dir / "submitted";
        backend::copy_local_sources(sources, saved);
        fs::copy_file(proposal, saved / "optimization_proposal.md", fs::copy_options::overwrite_existing);
        a.phase = attempt_phase::submitted;
        save();
        submit(a, s.c);
    }

    const run_request& m_req;
    platform::command_runner_base& m_runner;
    const say_fn& m_say;
    workspace m_ws;
    std::shared_ptr<workspace_lock> m_lock;
    record_origin m_origin;
    run_journal m_journal;
    iterate_request m_iterate;
    run_outcome m_out;
    int m_failures = 0;
    bool m_done = false;  // the proposer said it has nothing more to propose
};

}  // namespace

run_outcome run_loop(const run_request& req, platform::command_runner_base& runner, const say_fn& say) {
    driver d(req, runner, say);
    return d.run();
}

}  // namespace kloop::loop
