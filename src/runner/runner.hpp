// kloop runner: execute one job in this (child) process and report raw results as events.
//
// Responsibility: the part of kloop that touches candidate code. It loads the candidate and the
// reference, makes the gate calls (reference first, then the candidate into fresh poisoned,
// red-zoned outputs; inputs checked unchanged; outputs compared element by element) and the
// bench samples (cache flush, one timed call, input sets rotated, every Nth sample with new input
// values at the same addresses and checked). It reports raw numbers only: comparison metrics,
// raw sample times. Every verdict and statistic is computed by the orchestrator (eval/).
//
// Event stream (one JSON object per line, flushed at once):
//   {"event":"start","pid":…,"abi":1,"phase":"gate"|"bench"}
//   {"event":"case_start","id":…}  {"event":"stage","id":…,"stage":"reference"|"candidate"|"determinism"}
//   {"event":"case_result","id":…,…}
//     (on a GPU with CUPTI, the call facts — case_result, same_address_recheck — carry "census":
//      the kernels of that call, backend/cuda/kernel_census.hpp; judged by check/census_rules.hpp)
//   {"event":"bench_start","id":…}  {"event":"bench_result","id":…,"samples_s":[…],…}
//   {"event":"ab_start","id":…}  {"event":"stage","id":…,"stage":"warmup"|"timing"}
//   {"event":"ab_result","id":…,"base_samples_s":[…],"candidate_samples_s":[…],
//    "base_checks":[…],"candidate_checks":[…],…}          (phase "ab", runner/ab_phase.hpp)
//   {"event":"fatal","message":…}   {"event":"done"}
#pragma once

#include "runner/event_writer.hpp"
#include "runner/executor.hpp"
#include "runner/job.hpp"

namespace kloop::runner {

// Returns the runner's exit status: 0 when the job ran to the end (whatever the candidate did,
// short of killing the process), 3 when a library or entry point could not be loaded or a
// device error poisoned the context. The executors run the candidate's and the reference's calls.
int run_job(const job& j, event_writer& events, executor_base& candidate_exec, executor_base& reference_exec);

}  // namespace kloop::runner
