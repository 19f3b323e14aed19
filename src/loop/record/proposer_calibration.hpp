// kloop loop/record: how well the proposer's predictions matched the measurements, over a loop.
//
// Responsibility: tally the scored predictions of every iteration (loop/record/prediction) —
// made, scored, hits, hit rate, the median |ln off_by| of the misses (how far out a miss
// typically is: 0.1 ≈ 10 %), and the bias of the misses: optimistic = measured below the
// predicted range (off_by < 1; for `no change`, the candidate was slower), pessimistic = above —
// overall and per kind (speedup, no change, profile). Pure; `kloop report` prints it in
// final_summary.md and final_result.json, `kloop status --json` exposes the running tally.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/record/iteration_record.hpp"

namespace kloop::loop {

struct calibration_tally {
    int made = 0;
    int scored = 0;                      // hit or miss
    int hits = 0;
    int optimistic = 0;                  // misses below the range
    int pessimistic = 0;                 // misses above it
    std::optional<double> median_abs_log_off_by;  // over the misses with an off_by
    [[nodiscard]] std::optional<double> hit_rate() const;
};

struct proposer_calibration {
    calibration_tally all;
    std::vector<std::pair<prediction_kind, calibration_tally>> by_kind;  // speedup, no change, profile
};

[[nodiscard]] proposer_calibration calibrate(const std::vector<iteration_record>& records);

// {made, scored, hits, hit_rate, median_abs_log_off_by, optimistic, pessimistic, by_kind {kind: {...}}}
[[nodiscard]] nlohmann::json to_json(const proposer_calibration& c);

}  // namespace kloop::loop
