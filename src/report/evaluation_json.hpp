// kloop report: the JSON record of one evaluation (`kloop verify --json`).
//
// Responsibility: format eval::evaluation as the documented, versioned JSON object (docs/cli.md,
// "JSON output"). Schema (schema_version 1):
//   schema_version, kloop {version, commit, dirty}, command_line[], op, candidate,
//   status ("passed" | "gate_failed" | "build_failed"), reason,
//   env {host_cpu, logical_cpus, llc_bytes, compiler, flags[], git {available, commit, dirty}},
//   build {candidate, reference: {ok, cache_hit, library, argv[], compiler_version, diagnostics, wall_s,
//          device ("cpu"|"cuda"), target ("sm_90"; nvcc), ptxas {kernels[] {name, demangled, target,
//          registers, barriers, smem_bytes, stack_frame_bytes, spill_store_bytes, spill_load_bytes,
//          cumulative_stack_bytes, cmem_bytes}, device_functions[], gmem_bytes, notes[]} (nvcc)}},
//   gate {status "pass"|"fail", partial, gate_k, seeds[], runner_failure, wall_s,
//         cases[] {id, mode, shape, trial, seed, output (name | null), status "pass"|"fail",
//                  errors {max_abs, max_rel, rel_rms, mismatches, first_bad_index, nan, inf} | null,
//                  reason, deterministic (trial 0)}},
//   bench {ran, status, seed, evict_bytes, runner_failure, wall_s,
//          shapes[] {mode, shape, ok, error, n, median_ms, mean_ms, std_ms, min_ms, max_ms, p10_ms,
//                    p90_ms, q1_ms, q3_ms, iqr_ms, cv, stop_reason, warmup_calls, input_sets,
//                    flush_bytes, checks_total,
//                    checks_failed, flops, bytes, gflops, gbps, samples_ms[],
//                    CUDA only: graph_replay_s_per_call, graph_replay_ms_per_call (medians < ~20 µs),
//                    graph_replay_error, discarded_samples (throttled, retaken), sm_clock_mhz_median}},
//   integrity[] {name, status "pass"|"warn"|"fail"|"skipped", detail}
// Non-finite numbers are written as the strings "inf", "-inf", "nan".
#pragma once

#include <nlohmann/json.hpp>

#include "eval/record/evaluation.hpp"

namespace kloop::report {

// [{"code": …, "message": …}, …] (measure/sample_warnings).
[[nodiscard]] nlohmann::json warnings_json(const std::vector<measure::sample_warning>& warnings);
// {"version", "commit", "dirty", "build_type"}: the kloop that wrote a record.
[[nodiscard]] nlohmann::json kloop_build_json(const eval::environment_info& env);
// {"samples", "busy_samples", "max_other", "mean_other", "busy"} (platform/host_load).
[[nodiscard]] nlohmann::json host_load_json(const platform::host_load_report& load);

inline constexpr int evaluation_schema_version = 1;

[[nodiscard]] nlohmann::json to_json(const eval::evaluation& e);

}  // namespace kloop::report
