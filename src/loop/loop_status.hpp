// kloop loop: where a loop stands and what the protocol demands next.
//
// Responsibility: the pure logic behind `kloop status` and the stop rules: iteration count
// against the cap, the best version and its numbers, iterations since the last improvement
// (since the last positive, or since v0), and the next step:
//   cap reached                       → stop: `kloop report` (or `kloop nogo`)
//   target speedup reached (estimate) → stop: `kloop report` re-measures best vs baseline
//   >= stall_after iterations without improvement → stall: re-profile, re-read OPT_LOG.md
//                                       (which axes were tried), search for known techniques
//   otherwise                         → iterate: one change, a proposal, `kloop iterate`
// The speedup estimate divides geomean medians measured in different runs; it only decides
// whether to suggest the report, which measures best and baseline side by side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/record/iteration_record.hpp"

namespace kloop::loop {

inline constexpr int stall_after = 3;

enum class next_step { iterate, stall, stop_cap, stop_target };
[[nodiscard]] std::string to_string(next_step s);

struct loop_status {
    int iterations = 0;                      // excluding v0
    int max_iterations = 0;
    std::optional<int> best;                 // version number
    std::optional<double> best_geomean_median_s;
    std::optional<double> baseline_geomean_median_s;
    std::optional<double> estimated_speedup; // baseline / best, from separate runs
    int since_improvement = 0;
    int positive = 0, negative = 0, rejected = 0;
    next_step next = next_step::iterate;
    std::string next_text;
};

[[nodiscard]] loop_status compute_status(const std::vector<iteration_record>& records, int max_iterations,
                                         std::optional<double> target_speedup);

// Iterations after the last positive (or after v0 when none).
[[nodiscard]] int iterations_since_improvement(const std::vector<iteration_record>& records);

}  // namespace kloop::loop
