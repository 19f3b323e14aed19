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
// Event stream (one JSON object per line, flushed at once):
//   {"event":"start","pid":…,"abi":1,"phase":"gate"|"bench"}
//   {"event":"case_start","id":…}  {"event":"stage","id":…,"stage":"reference"|"candidate"|"determinism"}
//   {"event":"case_result","id":…,…}
//     (on a GPU with CUPTI, the call facts — case_result, same_address_recheck — carry "census":
//      the kernels of that call, backend/cuda/kernel_census.hpp; judged by check/census_rules.hpp)
//   {"event":"bench_start","id":…}  {"event":"bench_result","id":…,"samples_s":[…],
//    "sample_info":[{"window_s":…,…}, …] (one per sample: the checker's clock), "checks":[…],…}
//   {"event":"ab_start","id":…}  {"event":"stage","id":…,"stage":"warmup"|"timing"}
//   {"event":"ab_result","id":…,"base_samples_s":[…],"candidate_samples_s":[…],
//    "base_checks":[…],"candidate_checks":[…],…}          (phase "ab", runner/ab_phase.hpp)
//   {"event":"fatal","message":…}   {"event":"done"}
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
