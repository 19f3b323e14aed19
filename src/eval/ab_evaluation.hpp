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

#include "eval/record/ab_result.hpp"
#include "eval/record/context.hpp"
#include "eval/physics_floor.hpp"
#include "measure/ab_comparison.hpp"
#include "measure/statistics.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

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
