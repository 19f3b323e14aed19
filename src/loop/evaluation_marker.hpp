// kloop loop: the mark of an iteration whose candidate is being evaluated, and the record the
// next command makes when the kloop that wrote it died.
//
// Responsibility: no candidate can leave the loop stuck. `kloop iterate` writes
// `<staging>/evaluating.json` — the iteration's record so far (number, candidate file and its
// SHA-256, proposal, fingerprint, the version it is compared against), kloop's pid and the
// time — right before the candidate runs (the A/B, the profile step), and removes it when they
// return or throw. A kloop that dies in between (a candidate that reached it where no
// confinement holds, the kernel's out-of-memory killer, a SIGKILL) leaves it behind.
// The next command that takes the workspace lock — holding it proves the writer is gone —
// records that candidate as rejected (kind "crash", "kloop (pid N) died while evaluating it")
// in the iter_vN it would have had, with its staged copy and proposal, instead of an agent
// retrying it forever. A mark whose number or candidate copy does not fit is left to the
// stale-staging clean-up.
#pragma once

#include <filesystem>
#include <string>
#include <vector>


#include "loop/record/iteration_record.hpp"
#include "loop/workspace.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

// The file's name inside the staging directory.
inline constexpr const char* evaluation_marker_name = "evaluating.json";

class evaluation_marker {
public:
    // Writes the mark (atomically) into `staging`, which holds r.candidate_file.
    evaluation_marker(std::filesystem::path staging, const iteration_record& r);
    ~evaluation_marker();  // removes it: the evaluation returned or threw
    evaluation_marker(const evaluation_marker&) = delete;
    evaluation_marker& operator=(const evaluation_marker&) = delete;

private:
    std::filesystem::path m_file;
};

// Makes `r` the record of a candidate whose evaluation died with it running: rejected (crash) for
// `reason`, with no gate, bench, A/B or profile facts, its predictions scored against nothing.
void reject_as_died(iteration_record& r, const std::string& reason);

// Call with the workspace lock held, before the iterations are read: every mark a dead kloop
// left (one; or several when `kloop run --parallel` evaluated a round's siblings at once) whose
// number is not recorded yet becomes an iteration, rejected — in the order of their numbers,
// each taking the next free one from `next_number` — and its staged copy is committed as `candidate`
// (repo_git.hpp: commit_snapshot, which leaves the file as it is now). Returns one line per
// recorded iteration, for the output.
std::vector<std::string> record_abandoned_evaluations(const workspace& ws, const std::string& op, int next_number,
                                                      const record_origin& origin, const std::filesystem::path& candidate,
                                                      platform::command_runner_base& runner);

}  // namespace kloop::loop
