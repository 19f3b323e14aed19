// kloop report: the JSON record of an A/B comparison (`kloop compare --json`, `kloop verify --base`).
//
// Responsibility: format eval::ab_evaluation as a documented, versioned JSON object. Schema
// (schema_version 1, "kind": "kloop.compare"):
//   schema_version, kind, kloop {version, commit, dirty, build_type}, command_line[], op,
//   ok (both gates green and every shape timed and checked), reason, timed, runner_failure,
//   timing_wall_s (the A/B runner, start to exit),
//   seed, evict_bytes,
//   config {min_effect, resamples, confidence, seed, min_samples},
//   env {host_cpu, logical_cpus, llc_bytes, compiler, flags[]},
//   base, candidate: {label, status ("passed"|"gate_failed"|"build_failed"), reason,
//                     gate ("pass"|"fail"|"not_run"), git {available, commit, dirty}},
//   shapes[] {mode, shape, ok, error,
//             base, candidate: {n, median_ms, mean_ms, std_ms, min_ms, max_ms, p10_ms, p90_ms,
//                               q1_ms, q3_ms, iqr_ms, cv} | null,
//             speedup, ci_low, ci_high, verdict ("FASTER"|"SLOWER"|"SAME"|"AMBIGUOUS") | null each,
//             base_stop_reason, candidate_stop_reason, input_sets, flush_bytes,
//             checks {base {total, failed}, candidate {total, failed}},
//             base_samples_ms[], candidate_samples_ms[]},
//   overall {geomean_speedup, ci_low, ci_high, verdict, shapes} | null,
//   evaluations {base, candidate}: each the full `kloop verify` record (report/evaluation_json)
//             of that side's build and gate.
// speedup = median(base) / median(candidate): > 1 means the candidate is faster.
#pragma once

#include <nlohmann/json.hpp>

#include "eval/record/ab_result.hpp"

namespace kloop::report {

inline constexpr int ab_schema_version = 1;

[[nodiscard]] nlohmann::json to_json(const eval::ab_evaluation& ab);

// The statistics object used for each side of a shape (also by `kloop noise`).
[[nodiscard]] nlohmann::json stats_ms_json(const measure::sample_summary& s);

}  // namespace kloop::report
