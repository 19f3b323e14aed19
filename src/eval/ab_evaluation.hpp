// kloop eval: A/B — gate two candidates, then time them interleaved in one runner process.
//
// Responsibility: the only way kloop decides that one version is faster than another. Both
// sides are built and must pass the gate (a red side is reported, never skipped); then one
// runner process measures them interleaved (A B A B …) on the same inputs with the same cache
// eviction, and the verdict per shape and overall comes from a bootstrap interval of the ratio
// of medians (measure/ab_comparison). Speedups measured in different runs are never combined.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluation.hpp"
#include "eval/evaluation_options.hpp"
#include "eval/physics_floor.hpp"
#include "measure/ab_comparison.hpp"
#include "measure/statistics.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

struct ab_shape_result {
    std::string mode;
    std::string shape;
    bool ok = false;                       // both sides timed and every checked call passed
    std::string error;                     // why not ok (shown, never dropped)
    std::vector<double> base_samples_s;
    std::vector<double> candidate_samples_s;
    std::optional<measure::sample_summary> base_s;
    std::optional<measure::sample_summary> candidate_s;
    std::optional<measure::ab_result> verdict;  // speedup = median(base) / median(candidate)
    // additions: how the shape was measured
    std::string base_stop_reason;          // the side's stopping rule, or the item's cap
    std::string candidate_stop_reason;
    std::string early_verdict;             // the verdict that stopped the shape early ("" = none)
    int input_sets = 0;
    std::uint64_t flush_bytes = 0;
    std::optional<double> bytes;           // the spec's bytes for this shape
    std::optional<double> flops;           // the spec's flops for this shape
    double written_bytes = 0;              // bytes of the call's outputs and in-out inputs
    int base_checks_total = 0;             // checked timed calls (new values, same addresses)
    int base_checks_failed = 0;
    int candidate_checks_total = 0;
    int candidate_checks_failed = 0;
};

struct ab_evaluation {
    std::string op;
    std::string base_label;                // file path, or "<ref>:<path>" for a git ref
    std::string candidate_label;
    evaluation base;                       // build + gate of the base (bench not run)
    evaluation candidate;                  // build + gate of the candidate (bench not run)
    std::vector<ab_shape_result> shapes;
    std::optional<measure::ab_result> overall;  // equal-weight geomean over ok shapes
    bool ok = false;                       // both gates green and every shape ok
    std::string reason;                    // why not ok
    measure::ab_config config;
    environment_info env;
    std::vector<std::string> command_line;
    // additions
    bool timed = false;                    // the interleaved runner ran (both gates green)
    std::string runner_failure;            // crash / timeout / fatal of the A/B runner, if any
    double timing_wall_s = 0;              // the A/B runner's wall time, start to exit
    std::uint64_t seed = 0;                // the gate's drawn seed; the A/B inputs derive from it
    std::uint64_t evict_bytes = 0;
};

struct ab_context {
    const spec::op_spec& spec;
    std::filesystem::path base;            // a source file (a git ref is resolved by the caller)
    std::filesystem::path candidate;
    evaluation_options options;            // gate options and the stopping rule per side
    measure::ab_config ab;
    platform::command_runner_base& commands;
    std::filesystem::path cache_dir;
    std::filesystem::path scratch_dir;
};

// Builds and gates both sides (the same drawn seed for both; options.bench is ignored; the three
// builds run at once, the candidate's overlapping the base's gate, the gates one after the other), then, only
// when both gates are green, times them interleaved in one fresh runner process (job phase "ab")
// and computes the verdicts. Everything either side does is data in the result; throws only for
// what evaluate() throws (a reference that does not build, a usage error, an interruption).
[[nodiscard]] ab_evaluation compare_candidates(const ab_context& ctx);

// Each side's A/B medians against the physics floor (eval/physics_floor.hpp): the check replaces
// the side's `physics_floor` entry; a side below the floor is rejected (gate_failed, the reason
// names the shape, the achieved rate and the peak) and the pair then has no verdict (ok = false).
void judge_ab_physics(ab_evaluation& r, const physics_bounds_choice& bounds);

// Times an already compared pair again in a fresh runner process, without rebuilding or
// re-gating (`kloop noise`: A against A, N times). `gated` must have been timed (both gates
// green). `run` > 0 derives new input values for this run. The timed checks of this run
// replace those recorded in `gated`'s evaluations.
[[nodiscard]] ab_evaluation retime_candidates(const ab_context& ctx, const ab_evaluation& gated, int run);

}  // namespace kloop::eval
