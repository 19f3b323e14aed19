// kloop loop: `kloop run` — the loop driven unattended by a proposer (see run_driver.hpp).
#include "loop/run_driver.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "eval/visible_devices.hpp"
#include "loop/context_bundle.hpp"
#include "loop/loop_session.hpp"
#include "loop/proposer_lane.hpp"
#include "loop/run_journal.hpp"
#include "loop/sibling_choice.hpp"
#include "loop/workspace_digest.hpp"
#include "platform/device_pool.hpp"
#include "platform/file_io.hpp"
#include "platform/orphan_reaper.hpp"
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
        if (req.parallel > 1) m_iterate.options.progress = nullptr;  // one display, siblings at once
    }

    run_outcome run() {
        read_only_frozen_files::restore(run_dir(m_ws) / "frozen_modes.json");
        m_journal.ended.clear();
        m_journal.ended_at.clear();
        resume();
        for (;;) {
            if (platform::interrupt_requested()) end_interrupted();
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
            if (m_req.parallel > 1) round(s, memory);
            else attempt(s, memory);
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

    // Ends the run for Ctrl-C; `attempts` (journal indices) were running their proposers.
    [[noreturn]] void end_interrupted(const std::vector<std::size_t>& attempts = {}) {
        for (std::size_t i : attempts)
            m_journal.attempts[i].finish(attempt_phase::interrupted,
                                         attempts.size() > 1 ? "the run was interrupted while the round's proposers ran"
                                                             : "the run was interrupted while the proposer ran",
                                         platform::utc_now_iso8601());
        m_journal.ended = "interrupted";
        m_journal.ended_at = platform::utc_now_iso8601();
        save();
        throw error(exit_code::interrupted, "interrupted: the run's journal is in " + journal_file(m_ws).string() +
                                                "; `kloop run` again resumes it");
    }

    // An attempt a killed run left half done.
    void resume() {
        if (m_journal.attempts.empty()) return;
        if (m_journal.attempts.back().lane > 0) return resume_round();
        auto& a = m_journal.attempts.back();
        if (a.phase == attempt_phase::proposing) {
            a.finish(attempt_phase::interrupted, "kloop stopped while the proposer ran; the next attempt asks again", platform::utc_now_iso8601());
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
        a.finish(attempt_phase::refused, why, platform::utc_now_iso8601());
        ++m_failures;
        save();
        m_say(fmt::format("attempt {}: refused — {}", a.number, why));
    }

    void fail(run_attempt& a, const std::string& why) {
        a.finish(attempt_phase::failed, why, platform::utc_now_iso8601());
        ++m_failures;
        save();
        m_say(fmt::format("attempt {}: failed — {}", a.number, why));
    }

    // The attempts of the journal's last round, by index.
    std::vector<std::size_t> last_round() const {
        std::vector<std::size_t> out;
        const int round = m_journal.attempts.back().round;
        for (std::size_t i = 0; i < m_journal.attempts.size(); ++i)
            if (m_journal.attempts[i].lane > 0 && m_journal.attempts[i].round == round) out.push_back(i);
        return out;
    }

    // A round a killed run left half done: proposers that were running are asked again (in the
    // next round); siblings submitted but recorded by no iteration are submitted again, together.
    void resume_round() {
        const auto s = session();
        const auto spec = load_spec(s.c);
        std::vector<std::size_t> again;
        std::vector<bool> taken(s.records.size(), false);
        int lowest = m_journal.attempts.back().iteration;  // no sibling's iteration was numbered below it
        for (std::size_t i : last_round()) lowest = std::min(lowest, m_journal.attempts[i].iteration);
        for (std::size_t i : last_round()) {
            auto& a = m_journal.attempts[i];
            if (a.phase == attempt_phase::proposing) {
                a.finish(attempt_phase::interrupted, "kloop stopped while the proposer ran; the next round asks again", platform::utc_now_iso8601());
                m_say(fmt::format("attempt {}: interrupted by the end of an earlier run; asking again", a.number));
            } else if (a.phase == attempt_phase::submitted) {
                // Recorded already (the iteration, or its mark after a death while it ran) when a
                // record of the round's numbers holds the same sources.
                const auto sha = backend::local_sources_sha256(
                    eval::candidate_sources(spec, attempt_dir(m_ws, a.number) / "submitted" / s.c.candidate.filename()));
                bool recorded = false;
                for (const auto& r : s.records)
                    if (r.number >= lowest && r.number > 0 && !taken[static_cast<std::size_t>(r.number)] &&
                        r.sources_sha256 == sha) {
                        taken[static_cast<std::size_t>(r.number)] = true;
                        record_iterated(a, r);
                        m_say(fmt::format("attempt {}: its iteration {} was recorded before the earlier run ended", a.number,
                                          version_label(r.number)));
                        recorded = true;
                        break;
                    }
                if (!recorded) again.push_back(i);
            }
        }
        save();
        if (again.empty()) return;
        m_say(fmt::format("the earlier run ended in a round; submitting its {} unrecorded sibling(s) again", again.size()));
        submit_round(again);
    }

    // Every proposer of the round in its own thread; the frozen files read-only meanwhile, and
    // what the proposers leave running killed when the last one has ended.
    std::vector<proposer_outcome> run_proposers(const std::vector<proposer_request>& reqs, const loop_session& s) {
        std::vector<proposer_outcome> out(reqs.size());
        std::vector<std::exception_ptr> errors(reqs.size());
        {
            read_only_frozen_files frozen(m_ws, s.c, m_origin);
            platform::orphan_reaper reaper;
            std::vector<std::thread> threads;
            for (std::size_t i = 0; i < reqs.size(); ++i)
                threads.emplace_back([&, i] {
                    try {
                        out[i] = run_proposer(reqs[i], m_runner);
                    } catch (...) {
                        errors[i] = std::current_exception();
                    }
                });
            for (auto& t : threads) t.join();
            say_killed(reaper.reap(), reqs.size() > 1 ? "the round's proposers" : "the proposer",
                       reqs.front().attempt, reqs.back().attempt);
        }
        for (const auto& e : errors)
            if (e) std::rethrow_exception(e);
        return out;
    }

    // The processes a proposer left running, killed before anything is built or timed.
    void say_killed(const std::vector<platform::adopted_process>& killed, const std::string& who, int first, int last) {
        if (killed.empty()) return;
        std::vector<std::string> names;
        for (const auto& p : killed)
            names.push_back(fmt::format("{} ({})", p.pid, p.command.empty() ? std::string("?") : p.command.substr(0, 80)));
        m_say(fmt::format("{}: killed {} process(es) {} left running: {}",
                          first == last ? fmt::format("attempt {}", first) : fmt::format("attempts {} to {}", first, last),
                          killed.size(), who, fmt::join(names, ", ")));
    }

    // The proposers changed the workspace or a frozen file: the round's attempts are tampered and
    // the run ends (exit 5). Which sibling did it cannot be told; all of them carry the reason.
    void check_untouched(const workspace_digest& before, const std::vector<fs::path>& excluded,
                         const std::vector<std::size_t>& round) {
        std::string why;
        if (const auto changes = digest_changes(before, digest_workspace(m_ws.root(), excluded)); !changes.empty())
            why = fmt::format("the proposer changed the workspace: {}", fmt::join(changes, ", "));
        std::exception_ptr frozen;
        if (why.empty() && m_slurm_before)
            if (const auto changes = digest_changes(*m_slurm_before, digest_workspace(m_req.slurm->options.state_dir, {}));
                !changes.empty())
                why = fmt::format("the proposer changed the Slurm directory {} (its tasks' inputs and records are kloop's "
                                  "alone to write): {}",
                                  m_req.slurm->options.state_dir.string(), fmt::join(changes, ", "));
        if (why.empty()) try {
                (void)session();  // re-hashes every frozen file
            } catch (const contract_error& e) {
                why = std::string("the proposer changed a frozen file: ") + e.what();
                frozen = std::current_exception();
            }
        if (why.empty()) return;
        if (round.size() > 1) why += " (one of the round's proposers, running at once)";
        for (std::size_t i : round) m_journal.attempts[i].finish(attempt_phase::tampered, why, platform::utc_now_iso8601());
        m_journal.ended = m_journal.attempts[round.front()].reason;
        save();
        if (frozen) std::rethrow_exception(frozen);
        throw contract_error(fmt::format("attempt {}: {}. The run ends: the workspace's records are kloop's alone to "
                                         "write; check them (git status in the workspace's repository, the iteration "
                                         "directories) before any further command",
                                         m_journal.attempts[round.front()].number, m_journal.attempts[round.front()].reason));
    }

    // What a proposer left, checked: its candidate's sources when it is one to submit, else
    // nullopt with the attempt failed, refused or done.
    std::optional<backend::local_sources> take_candidate(run_attempt& a, const proposer_outcome& po,
                                                         const fs::path& proposal, const fs::path& kernel,
                                                         const spec::op_spec& spec, const std::string& best_sha, int best) {
        if (po.end == proposer_end::done) {
            a.finish(attempt_phase::done, "the proposer has nothing more to propose", platform::utc_now_iso8601());
            m_done = true;
            save();
            return std::nullopt;
        }
        if (po.end == proposer_end::failed) {
            fail(a, "the proposer " + po.how + (po.stderr_tail.empty() ? std::string() : "; its stderr ends: " + po.stderr_tail));
            return std::nullopt;
        }
        if (!fs::is_regular_file(proposal)) {
            fail(a, "the proposer exited 0 but wrote no proposal at " + proposal.string() + " (KLOOP_PROPOSAL)");
            return std::nullopt;
        }
        if (!fs::is_regular_file(kernel)) {
            fail(a, "the proposer removed the kernel file " + kernel.string());
            return std::nullopt;
        }
        backend::local_sources sources;
        try {
            sources = eval::candidate_sources(spec, kernel);
        } catch (const usage_error& e) {
            refuse(a, e.what());
            return std::nullopt;
        }
        if (backend::local_sources_sha256(sources) == best_sha) {
            refuse(a, fmt::format("the kernel file is {} unchanged: an attempt must change it", version_label(best)));
            return std::nullopt;
        }
        return sources;
    }

    // Saves what goes to iterate under the attempt's submitted/.
    void save_submitted(run_attempt& a, const backend::local_sources& sources, const fs::path& proposal) {
        const fs::path saved = attempt_dir(m_ws, a.number) / "submitted";
        // The attempt's directory is the proposer's to write: whatever it planted there goes first,
        // so the saved copy holds exactly the candidate's sources.
        fs::remove_all(saved);
        backend::copy_local_sources(sources, saved);
        fs::copy_file(proposal, saved / "optimization_proposal.md", fs::copy_options::overwrite_existing);
        a.phase = attempt_phase::submitted;
        save();
    }

    const std::vector<platform::device_slot>& slots(const spec::op_spec& spec) {
        if (m_slots.empty()) m_slots = eval::visible_devices(spec, m_req.devices, m_runner);
        return m_slots;
    }

    // The attempt before journal index `index` when it failed or was refused (the proposer is told
    // why), else nullptr. Call after the journal has stopped growing for this attempt or round.
    const run_attempt* failed_before(std::size_t index) const {
        if (index == 0) return nullptr;
        const auto& p = m_journal.attempts[index - 1];
        return p.phase == attempt_phase::failed || p.phase == attempt_phase::refused ? &p : nullptr;
    }

    // A round of --parallel sibling attempts (run_driver.hpp).
    void round(loop_session& s, strategy_memory& memory) {
        int k = std::min(m_req.parallel, m_out.status.max_iterations - m_out.status.iterations);
        if (m_req.iterations) k = std::min(k, *m_req.iterations - m_out.iterations);
        k = std::max(k, 1);
        const int number = m_journal.attempts.empty() ? 1 : m_journal.attempts.back().round + 1;
        const std::size_t first = m_journal.attempts.size();
        std::vector<std::size_t> round;
        for (int i = 0; i < k; ++i) {
            ++m_out.attempts;
            auto& a = m_journal.add(m_out.status.iterations + 1 + i, platform::utc_now_iso8601());
            a.lane = i + 1;
            a.round = number;
            round.push_back(m_journal.attempts.size() - 1);
        }
        const run_attempt* previous = failed_before(first);
        const auto spec = load_spec(s.c);
        const int best = m_out.status.best.value_or(0);
        save_unrecorded_sources(s, spec, attempt_dir(m_ws, m_journal.attempts[round.front()].number) / "unrecorded", m_say);
        put_back_version(s, best);
        const auto fps = memory.summarise(s.key());
        std::vector<proposer_request> reqs;
        std::vector<fs::path> excluded;
        for (std::size_t i : round) {
            const auto& a = m_journal.attempts[i];
            const fs::path dir = attempt_dir(m_ws, a.number);
            fs::remove_all(dir / "lane");
            fs::create_directories(dir);
            const fs::path kernel = make_proposer_lane(s.c.candidate, m_ws.root(), dir / "lane");
            const fs::path proposal = dir / "optimization_proposal.md";
            write_context_bundle({s, m_out.status, fps, a, previous, kernel, proposal, m_req.proposer_timeout_s, a.lane, k},
                                 dir / "context");
            reqs.push_back({m_req.proposer, kernel.parent_path(), m_ws.root(), dir, dir / "context", kernel, proposal, a.number,
                            a.iteration, m_req.proposer_timeout_s, m_req.max_log_bytes});
            excluded.push_back(dir);
        }
        save();
        m_say(fmt::format("round {}: {} proposer(s) at once, attempts {} to {}", number, k,
                          m_journal.attempts[round.front()].number, m_journal.attempts[round.back()].number));

        const auto before = digest_workspace(m_ws.root(), excluded);
        if (m_req.slurm) {
            fs::create_directories(m_req.slurm->options.state_dir);
            m_slurm_before = digest_workspace(m_req.slurm->options.state_dir, {});
        }
        const auto outcomes = run_proposers(reqs, s);
        for (std::size_t j = 0; j < round.size(); ++j) {
            m_journal.attempts[round[j]].proposer = outcomes[j].how;
            m_journal.attempts[round[j]].proposer_wall_s = outcomes[j].wall_s;
        }
        check_untouched(before, excluded, round);
        // The loop's own rows in the shared memory come from its records, whatever happened to them.
        for (const auto& r : s.records) memory.record(memory_row_of(s, r));
        if (std::any_of(outcomes.begin(), outcomes.end(),
                        [](const proposer_outcome& o) { return o.end == proposer_end::interrupted; }))
            end_interrupted(round);

        const std::string best_sha = s.records[static_cast<std::size_t>(best)].sources_sha256;
        std::vector<std::size_t> submitted;
        std::vector<std::pair<std::string, int>> seen;  // sources SHA-256, attempt
        for (std::size_t j = 0; j < round.size(); ++j) {
            auto& a = m_journal.attempts[round[j]];
            const auto sources = take_candidate(a, outcomes[j], reqs[j].proposal, reqs[j].candidate, spec, best_sha, best);
            if (!sources) continue;
            const auto sha = backend::local_sources_sha256(*sources);
            if (const auto twin = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == sha; });
                twin != seen.end()) {
                refuse(a, fmt::format("the candidate is the one attempt {} submitted in the same round", twin->second));
                continue;
            }
            seen.emplace_back(sha, a.number);
            save_submitted(a, *sources, reqs[j].proposal);
            submitted.push_back(round[j]);
        }
        submit_round(submitted);
    }

    // Stages the round's submitted siblings in turn, evaluates them at once on the device slots,
    // promotes the one with the largest speedup, and records them in turn.
    void submit_round(const std::vector<std::size_t>& attempts) {
        if (attempts.empty()) return;
        auto s = open_session(m_ws.root(), access::write, m_origin, m_lock);
        strategy_memory memory(m_req.iterate.memory_db);
        const auto spec = load_spec(s.c);
        std::vector<iterate_request> reqs;
        std::vector<staged_iteration> staged;
        std::vector<std::size_t> owner;
        for (std::size_t i : attempts) {
            auto& a = m_journal.attempts[i];
            const fs::path saved = attempt_dir(m_ws, a.number) / "submitted";
            auto req = m_iterate;
            req.candidate = saved / s.c.candidate.filename();
            req.proposal = saved / "optimization_proposal.md";
            req.commit_as = s.c.candidate;
            try {
                refuse_past_cap(s, static_cast<int>(staged.size()));  // siblings resubmitted after a kill too
                staged.push_back(stage_iteration(s, memory, req, static_cast<int>(s.records.size() + staged.size()), m_runner));
                a.iteration = staged.back().record.number;
                reqs.push_back(std::move(req));
                owner.push_back(i);
            } catch (const usage_error& e) {
                refuse(a, e.what());
            }
        }
        save();
        if (staged.empty()) return;
        if (m_req.slurm) {
            std::vector<int> numbers;
            for (std::size_t i : owner) numbers.push_back(m_journal.attempts[i].number);
            try {
                evaluate_siblings_on_slurm(staged, numbers, m_journal.attempts[owner.front()].round, s, *m_req.slurm, m_runner);
            } catch (const error& e) {
                if (e.get_code() == exit_code::interrupted) end_interrupted();
                throw;
            }
        } else {
            platform::run_on_devices(slots(spec), staged.size(), m_runner,
                                     [&](std::size_t j, const platform::device_slot& slot, platform::command_runner_base& bound) {
                                         evaluate_staged(staged[j], s.c, s.ws.state_dir(), reqs[j], bound,
                                                         slot.id.empty() ? std::string() : slot.label);
                                     });
        }
        std::vector<iteration_record> records;
        for (const auto& x : staged) records.push_back(x.record);
        (void)choose_sibling(records);
        for (std::size_t j = 0; j < staged.size(); ++j) {
            staged[j].record.outpaced_by = records[j].outpaced_by;
            staged[j].record.reason = records[j].reason;
        }
        for (std::size_t j = 0; j < staged.size(); ++j) {
            auto& a = m_journal.attempts[owner[j]];
            const auto o = record_staged(s, memory, staged[j], reqs[j], m_runner);
            record_iterated(a, o.record);
            ++m_out.iterations;
            m_failures = 0;
            save();
            m_say(fmt::format("attempt {}: {}{}", a.number, a.reason,
                              o.record.device.empty() ? std::string() : " | on " + o.record.device));
            for (const auto& w : o.record.warnings) m_say("  warning: " + w);
            for (const auto& n : o.notes) m_say("  " + n);
        }
        // The kernel file holds the best version between rounds and after the run.
        const auto st = compute_status(s.records, s.c.max_iterations, s.c.target_speedup);
        put_back_version(s, st.best.value_or(0));
    }

    void attempt(loop_session& s, strategy_memory& memory) {
        ++m_out.attempts;
        const std::size_t index = m_journal.attempts.size();
        auto& a = m_journal.add(m_out.status.iterations + 1, platform::utc_now_iso8601());
        const run_attempt* previous = failed_before(index);
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
            platform::orphan_reaper reaper;
            po = run_proposer({m_req.proposer, s.c.candidate.parent_path(), m_ws.root(), dir, dir / "context", s.c.candidate,
                               proposal, a.number, a.iteration, m_req.proposer_timeout_s, m_req.max_log_bytes},
                              m_runner);
            say_killed(reaper.reap(), "the proposer", a.number, a.number);
        }
        a.proposer = po.how;
        a.proposer_wall_s = po.wall_s;
        check_untouched(before, {dir}, {index});
        // The loop's own rows in the shared memory come from its records, whatever happened to them.
        for (const auto& r : s.records) memory.record(memory_row_of(s, r));

        if (po.end == proposer_end::interrupted) end_interrupted({index});
        const auto sources = take_candidate(a, po, proposal, s.c.candidate, spec,
                                            s.records[static_cast<std::size_t>(best)].sources_sha256, best);
        if (!sources) return;
        save_submitted(a, *sources, proposal);
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
    std::vector<platform::device_slot> m_slots;  // a round's evaluation slots, probed once
    std::optional<workspace_digest> m_slurm_before;  // --slurm: its directory as the round's proposers got it
    bool m_done = false;  // the proposer said it has nothing more to propose
};

}  // namespace

run_outcome run_loop(const run_request& req, platform::command_runner_base& runner, const say_fn& say) {
    driver d(req, runner, say);
    return d.run();
}

}  // namespace kloop::loop
