// kloop runner: the A/B phase — a base and a candidate timed interleaved in one process.
//
// Responsibility: for one bench item, time the base library's entry (A) and the candidate's (B)
// alternately, on the same input sets (same addresses, same values), with the same cache
// eviction before every sample, so that whatever drifts during the measurement (clocks, other
// load, thermal state) hits both sides alike. Rounds alternate the order, A B | B A | A B | …
// (ABBA), so a bias of "the call right after a flush" or "the second call of a round" also
// cancels. The input sets rotate over every call (both sides share one rotation), which keeps the
// bench's guarantee: between two uses of one set there is at least the planned cold traffic.
// Each side has its own stopping rule; the item ends when both are done, or when either side
// reaches a cap (time or samples). Every check_every-th round, both sides' calls get new input
// values at the same addresses and are checked against the reference, exactly as in the bench.
//
// Events: {"event":"ab_start","id"}, {"event":"stage","id","stage":"warmup"|"timing"},
//   {"event":"ab_result","id","order":"ABBA","base_samples_s":[…],"candidate_samples_s":[…],
//    "base_checks":[…],"candidate_checks":[…],"base_stop_reason","candidate_stop_reason","stop",
//    "base_warmup_calls","candidate_warmup_calls","input_sets","flush_bytes",
//    "base_discarded_samples","candidate_discarded_samples"}  (samples an executor flagged as
//    taken while throttled are retaken at once, up to 10 times per sample)
//   or, when a call fails: {"event":"ab_result","id","error":"warmup"|"sample","side":"base"|
//    "candidate","sample","return_code"[,"device_error"],"base_samples_s","candidate_samples_s"}.
#pragma once

#include "runner/call_checks.hpp"
#include "runner/event_writer.hpp"
#include "runner/job.hpp"

namespace kloop::runner {

// `fns.base` and `fns.candidate` are timed; `fns.reference` checks. Both timed sides run on
// `ex.candidate`.
void run_ab_item(const job& j, const bench_item& b, const entry_pair& fns, const executors& ex, event_writer& ev);

}  // namespace kloop::runner
