// kloop eval: one runner process — write the job, spawn kloop-runner, collect its events.
//
// Responsibility: the process boundary between the orchestrator and candidate code. The job is
// written into a scratch directory, the runner runs with a wall-clock timeout in its own process
// group (and dies with kloop), and every event it flushed before exiting (or dying) is read back.
// Its stdout and stderr — where the candidate's own prints go — are kept apart in
// `<phase>_runner.stdout.log` and `<phase>_runner.stderr.log`, each capped at max_output_bytes
// (the rest is read and dropped); kloop keeps only their last lines, never the whole log.
// Jobs on the "python" device start kloop's Python worker instead (backend/python), which speaks
// the same protocol. A crash, a hang or garbage output of the runner is reported in the session,
// never thrown.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "eval/record/progress.hpp"
#include "platform/subprocess.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

struct runner_session {
    platform::process_result process;
    std::vector<runner::event> events;     // every line read, typed (runner/events.hpp)
    bool finished = false;                 // the runner wrote its "done" event
    std::string fatal;                     // the runner's "fatal" message, if any
    // The last 20 lines (at most 4 KiB) of the runner's stderr, or of its stdout when stderr is
    // empty (candidate prints, the runner's own complaints).
    std::string output_tail;
    // Why the events cannot be the record of one honest run (find_inconsistency), or empty. A
    // session with one is never finished, and its failure says why.
    std::string inconsistency;

    // "killed by SIGSEGV (signal 11)", "timed out after 5.0 s", "exited with 2: …" — empty when fine.
    [[nodiscard]] std::string describe_failure() const;
};

// The first way `events` (in file order) breaks the protocol, or "" when they keep it: the first
// line is "start" and only it; nothing follows "done"; every result (case, bench, A/B, profile)
// follows its own start event and comes once per id. Forged or replayed lines break one of these.
// (A line that is no event of runner/events.hpp — a field missing or of the wrong type, a kind or
// a field the schema does not have, a start of another schema version — already made the
// session inconsistent when it was read.)
[[nodiscard]] std::string find_inconsistency(const std::vector<runner::event>& events);

// The session's start event, or nullptr.
[[nodiscard]] const runner::start_event* start_of(const std::vector<runner::event>& events);

// The events of one type, in file order.
template <class T>
[[nodiscard]] std::vector<const T*> events_of(const std::vector<runner::event>& events) {
    std::vector<const T*> out;
    for (const auto& e : events)
        if (const auto* x = std::get_if<T>(&e)) out.push_back(x);
    return out;
}

// `be`: the op's backend, which says how its runner starts (backend/backend.hpp's launch).
// `wrapper`: argv words put before the runner's own (the profile phase runs it under ncu; empty
// otherwise); the runner's output then also holds the wrapper's, and both go to the logs.
// `max_output_bytes`: what each of the two logs keeps (evaluation_options::max_output_bytes).
// `max_memory_bytes` (> 0): RLIMIT_DATA of a CPU runner (kloop-runner: the checker and the
// candidate host it starts, each; a Python worker of `[python] device = "cpu"` sets it on itself
// before it forks its hosts, from KLOOP_MEMORY_LIMIT_BYTES), evaluation_options::max_memory_bytes.
// A CUDA runner, whose driver maps device memory into it, and a GPU Python worker are not limited.
// `progress` (may be null) is told what the runner does while it runs (eval/runner_progress).
[[nodiscard]] runner_session run_runner(const backend::op_backend& be, const runner::job& job, const std::filesystem::path& scratch_dir,
                                        double timeout_s, platform::command_runner_base& commands,
                                        const std::vector<std::string>& wrapper, std::size_t max_output_bytes,
                                        std::size_t max_memory_bytes = 0, progress_sink* progress = nullptr);

}  // namespace kloop::eval
