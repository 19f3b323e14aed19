// kloop loop: what a proposer of `kloop run` is given before each attempt.
//
// Responsibility: write the attempt's context directory from the workspace's records and the
// strategy memory — everything a program needs to propose the next change, in files:
//   README.md            the protocol for this attempt: what to edit, what to write, the
//                        proposal format with its predictions, the rules, the exit codes
//   status.json          `kloop status --json` (loop/status_document)
//   strategies.json      the memory's blocked and preferred fingerprints for this loop's key
//   best/                the best version's sources, its iteration_summary.md and its profile
//                        summary (profile_summary.md / .json) when it was profiled
//   last/                the last iteration's iteration_summary.md (its verdict per shape) and
//                        record (verdict.json), when there is one after v0
//   previous_attempt.md  why the previous attempt was refused or failed, when it was
//   OPT_LOG.md, TRAPS.md, dispatch.md, draft.md   copies of the workspace's documents
// Copies, never links: what the proposer reads cannot change the workspace.
#pragma once

#include <filesystem>
#include <optional>

#include "loop/loop_session.hpp"
#include "loop/loop_status.hpp"
#include "loop/run_journal.hpp"
#include "loop/strategy_memory.hpp"

namespace kloop::loop {

struct context_inputs {
    const loop_session& session;
    const loop_status& status;
    const std::vector<fingerprint_summary>& strategies;
    const run_attempt& attempt;
    const run_attempt* previous = nullptr;   // the attempt before, when it was refused or failed
    std::filesystem::path candidate;         // the kernel file the proposer edits
    std::filesystem::path proposal;          // where it writes the proposal
    double timeout_s = 0;
    int lane = 0;                            // k >= 1: this attempt is lane k of a round of `lanes` (--parallel)
    int lanes = 0;
};

void write_context_bundle(const context_inputs& in, const std::filesystem::path& dir);

// README.md of the bundle: the protocol, with this attempt's paths.
[[nodiscard]] std::string context_readme(const context_inputs& in);

}  // namespace kloop::loop
