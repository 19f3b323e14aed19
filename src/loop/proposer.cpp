// kloop loop: the proposer of an unattended run (see proposer.hpp).
#include "loop/proposer.hpp"

#include <chrono>
#include <cmath>

namespace kloop::loop {

platform::process_request proposer_process_request(const proposer_request& r) {
    platform::process_request p;
    p.argv = {"/bin/sh", "-c", r.command};
    p.cwd = r.cwd;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auto deadline = std::chrono::duration_cast<std::chrono::seconds>(now).count() +
                          static_cast<long long>(std::ceil(r.timeout_s));
    p.env_overrides = {{"KLOOP_WORKSPACE", r.workspace.string()},
                       {"KLOOP_CONTEXT", r.context_dir.string()},
                       {"KLOOP_CANDIDATE", r.candidate.string()},
                       {"KLOOP_PROPOSAL", r.proposal.string()},
                       {"KLOOP_ATTEMPT", std::to_string(r.attempt)},
                       {"KLOOP_ITERATION", std::to_string(r.iteration)},
                       {"KLOOP_DEADLINE", std::to_string(deadline)}};
    p.timeout_s = r.timeout_s;
    p.stdout_file = r.attempt_dir / "proposer.stdout.log";
    p.stderr_file = r.attempt_dir / "proposer.stderr.log";
    p.max_file_bytes = r.max_log_bytes;
    p.kill_grace_s = 5.0;
    p.guard_group = true;
    return p;
}

proposer_outcome outcome_of(const platform::process_result& r) {
    proposer_outcome o;
    o.how = r.describe();
    o.wall_s = r.wall_s;
    o.stderr_tail = r.stderr_tail.size() > 2000 ? r.stderr_tail.substr(r.stderr_tail.size() - 2000) : r.stderr_tail;
    if (r.interrupted) o.end = proposer_end::interrupted;
    else if (r.succeeded()) o.end = proposer_end::ready;
    else if (r.started && !r.timed_out && r.term_signal == 0 && r.exit_code == proposer_done_exit) o.end = proposer_end::done;
    else o.end = proposer_end::failed;
    return o;
}

proposer_outcome run_proposer(const proposer_request& r, platform::command_runner_base& runner) {
    return outcome_of(runner.run(proposer_process_request(r)));
}

}  // namespace kloop::loop
