// kloop runner: the checker — execute one job and report raw results as events.
//
// Responsibility: everything of a runner that decides a verdict, in a process that never loads
// candidate code. It reads the job, loads the reference (a sealed, hash-checked copy), starts the
// candidate's confined host process (runner/remote_executor, runner/candidate_host) and makes,
// through it, the gate calls (reference first, then the candidate into fresh poisoned,
// red-zoned outputs; inputs checked unchanged; outputs compared element by element) and the
// bench samples (every call prepared alike: a few input elements renewed, outputs poisoned, red
// zones rewritten; cache flush; one timed call; red zones and inputs checked after every call;
// a secret draw of the calls whose outputs are compared). It reports raw numbers only:
// comparison metrics, raw sample times with the checker's own window around each. Every verdict
// and statistic is computed by the orchestrator (eval/). The events file is this process's alone.
//
// The events it writes, in order (runner/events.hpp; one JSON object per line, flushed at once):
// start; per gate case case_start, stage (reference, candidate, same_address_recheck,
// determinism), case_result (the call's facts; on a GPU with CUPTI their "census":
// backend/cuda/kernel_census.hpp); per bench item bench_start, bench_result (samples, each with
// the checker's window in sample_info, the checked calls' facts); per A/B item ab_start, stage
// (warmup, timing), ab_result (runner/ab_phase.hpp); per profile item profile_start,
// profile_result; fatal when the job cannot go on; done.
#pragma once

#include "runner/event_writer.hpp"
#include "runner/executor.hpp"
#include "runner/job.hpp"
#include "runner/remote_executor.hpp"

namespace kloop::runner {

// Returns the runner's exit status: 0 when the job ran to the end (whatever the candidate did),
// 3 when a library or entry point could not be loaded, the candidate's host died, or a device
// error poisoned the context ("fatal" event). The candidate (and the base of an A/B) run in
// candidate hosts behind `candidates`; the reference runs here on `reference_exec`.
int run_job(const job& j, event_writer& events, remote_executor& candidates, executor_base& reference_exec);

}  // namespace kloop::runner
