// kloop eval: one runner process — write the job, spawn kloop-runner, collect its events.
//
// Responsibility: the process boundary between the orchestrator and candidate code. The job is
// written into a scratch directory, the runner runs with a wall-clock timeout in its own process
// group, and every event it flushed before exiting (or dying) is read back.
// Jobs on the "python" device start kloop's Python worker instead (backend/python), which speaks
// the same protocol. A crash, a hang or garbage output of the runner is reported in the session,
// never thrown.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/subprocess.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

struct runner_session {
    platform::process_result process;
    std::vector<nlohmann::json> events;
    bool finished = false;                 // the runner wrote its "done" event
    std::string fatal;                     // the runner's "fatal" message, if any
    std::string output_tail;               // last lines of the runner's stdout+stderr (candidate prints)
    // Why the events cannot be the record of one honest run (find_inconsistency), or empty. A
    // session with one is never finished, and its failure says why.
    std::string inconsistency;

    // "killed by SIGSEGV (signal 11)", "timed out after 5.0 s", "exited with 2: …" — empty when fine.
    [[nodiscard]] std::string describe_failure() const;
};

// The first way `events` (in file order) breaks the protocol, or "" when they keep it: the first
// line is "start" and only it; nothing follows "done"; every result (case, bench, A/B, profile)
// follows its own start event and comes once per id. Forged or replayed lines break one of these.
[[nodiscard]] std::string find_inconsistency(const std::vector<nlohmann::json>& events);

// `wrapper`: argv words put before the runner's own (the profile phase runs it under ncu); the
// runner's output then also holds the wrapper's, and both go to the log.
[[nodiscard]] runner_session run_runner(const runner::job& job, const std::filesystem::path& scratch_dir,
                                        double timeout_s, platform::command_runner_base& commands,
                                        const std::vector<std::string>& wrapper = {});

}  // namespace kloop::eval
