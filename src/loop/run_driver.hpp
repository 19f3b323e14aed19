// kloop loop: `kloop run` — the loop driven unattended by a proposer, until a stop rule.
//
// Responsibility: the driver around loop::run_iteration. It holds the workspace lock for the
// whole run (so neither a second run nor the proposer itself can write an iteration), and for
// each attempt:
//   1. stops when a rule says so: the contract's iteration cap, this run's --iterations, the
//      target speedup (estimated), --max-stall iterations without improvement, or
//      --max-failures failed or refused attempts in a row (exit 7);
//   2. puts the best version's sources back into the kernel file (each proposal is one change
//      against the best; sources no iteration recorded are first saved under run/), and writes
//      the attempt's context bundle (loop/context_bundle);
//   3. digests the workspace, makes the frozen files read-only, runs the proposer
//      (loop/proposer), kills what it left running (platform/orphan_reaper: in its process group
//      or out of it), restores their modes, and digests again: a changed workspace record or a
//      changed frozen file ends the run (exit 5, kloop::contract_error, naming the files); the
//      loop's own rows in the strategy memory are rewritten from its records;
//   4. refuses the candidate when the kernel file is unchanged, and otherwise hands it with its
//      proposal to run_iteration with predictions required and blocked fingerprints enforced: a
//      proposal that breaks a rule (kloop::usage_error before anything is measured) is a refused
//      attempt, not an iteration;
//   5. journals every phase (loop/run_journal) so a killed run resumes: an attempt killed while
//      its proposer ran is asked again, one killed in its iteration is submitted again from its
//      saved copy unless the iteration was recorded.
// Ctrl-C ends the proposer's process group and the run (kloop::error, exit 130), journalled.
//
// With --parallel N each attempt becomes a round of N sibling attempts: the best version is put
// back once, every sibling's proposer runs at the same time in its own lane (a copy of the
// kernel's directory, loop/proposer_lane), with the same checks of the workspace and the frozen
// files around the whole round; the siblings that submit a changed, admitted candidate (a later
// sibling identical to an earlier one is refused) are staged in turn, numbered in attempt order,
// evaluated at once against the same best — one A/B per device slot at a time (--devices,
// platform/device_pool), each record naming its device — and recorded in turn, the one with the
// largest speedup promoted and the other positives marked outpaced (loop/sibling_choice). Each is
// committed as the kernel file from its saved copy; after the round the kernel file holds the
// best version. Proposers never run while a sibling is timed: a round's evaluations start when
// its last proposer has ended. A run killed in a round resubmits its siblings that no iteration
// records, together. With --slurm the round's evaluations are the tasks of one job array
// (loop/sibling_slurm), each evaluated on its node as it would be here; a run killed while the
// job ran waits for that job when started again. The Slurm directory is digested around the
// round's proposers as the workspace is: a proposer that plants a task or a record there ends the
// run (exit 5).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "loop/iteration.hpp"
#include "loop/proposer.hpp"
#include "loop/sibling_slurm.hpp"

namespace kloop::loop {

struct run_request {
    iterate_request iterate;               // workspace, options, A/B, profile, memory: every iteration's
    std::string proposer;                  // the proposer's shell command
    std::optional<int> iterations;         // this run's own cap (the contract's cap holds anyway)
    int max_stall = 5;                     // iterations without improvement that end the run
    int max_failures = 3;                  // failed or refused attempts in a row that end the run (exit 7)
    double proposer_timeout_s = 3600;
    std::size_t max_log_bytes = 16u << 20; // what each proposer log keeps
    int parallel = 1;                      // proposers per round (--parallel); 1: in place, one at a time
    std::string devices = "1";             // the slots a round's evaluations spread over (--devices)
    std::optional<sibling_slurm_engine> slurm;  // --slurm: a round's evaluations as a job array instead
};

struct run_outcome {
    std::string ended;                     // why the run stopped
    int iterations = 0;                    // iterations this run recorded
    int attempts = 0;                      // attempts this run made
    bool proposer_failed = false;          // ended by --max-failures: the CLI exits 7
    loop_status status;                    // where the loop stands at the end
};

// `say` gets one line per event (an attempt's outcome, a repair, the end).
[[nodiscard]] run_outcome run_loop(const run_request& req, platform::command_runner_base& runner,
                                   const std::function<void(const std::string&)>& say);

}  // namespace kloop::loop
