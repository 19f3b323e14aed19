// kloop loop: the proposer of an unattended run — any program that writes the next candidate.
//
// Responsibility: start the proposer command of `kloop run` (an agent CLI, a script: run by
// /bin/sh -c in the candidate's repository) with the protocol's environment, hold it to its
// time limit, keep its output in the attempt's logs, and say how it ended. The protocol
// (docs/agents.md):
//   KLOOP_WORKSPACE   the loop's workspace (read it; writing there ends the run)
//   KLOOP_CONTEXT     this attempt's context bundle (loop/context_bundle)
//   KLOOP_CANDIDATE   the kernel file to edit in place (it holds the best version's source)
//   KLOOP_PROPOSAL    where to write optimization_proposal.md
//   KLOOP_ATTEMPT, KLOOP_ITERATION   this attempt's number, the iteration number it would get
//   KLOOP_DEADLINE    when the time limit ends, seconds since the epoch
// Exit 0: the candidate and the proposal are ready. Exit proposer_done_exit (10): nothing more
// to propose, the run ends. Anything else — another exit code, a signal, the time limit — is a
// failed attempt. The command's process group is killed at the time limit, on Ctrl-C, and when
// kloop dies (platform/subprocess: guard_group).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "platform/subprocess.hpp"

namespace kloop::loop {

inline constexpr int proposer_done_exit = 10;

struct proposer_request {
    std::string command;                  // a shell command line
    std::filesystem::path cwd;            // the candidate's repository
    std::filesystem::path workspace;
    std::filesystem::path attempt_dir;    // its logs go here: proposer.stdout.log, proposer.stderr.log
    std::filesystem::path context_dir;
    std::filesystem::path candidate;
    std::filesystem::path proposal;
    int attempt = 0;
    int iteration = 0;
    double timeout_s = 3600;
    std::size_t max_log_bytes = 16u << 20;
};

enum class proposer_end { ready, done, failed, interrupted };

struct proposer_outcome {
    proposer_end end = proposer_end::failed;
    std::string how;                      // process_result::describe(): "exited with 0", "timed out after 5.0 s"
    double wall_s = 0;
    std::string stderr_tail;              // the end of what it printed on stderr, for the failure's reason
};

[[nodiscard]] platform::process_request proposer_process_request(const proposer_request& r);
[[nodiscard]] proposer_outcome outcome_of(const platform::process_result& r);
[[nodiscard]] proposer_outcome run_proposer(const proposer_request& r, platform::command_runner_base& runner);

}  // namespace kloop::loop
