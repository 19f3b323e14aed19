// kloop loop: which version is the best — eligibility and ranking.
//
// Responsibility: the selection rule behind `kloop best`, the "current best" every `kloop
// iterate` is compared against, and the version `kloop report` promotes.
// Eligible: a full (not --gate-k) green gate, a successful bench, and status baseline or
// positive — a version the A/B showed to beat the best of its time (negative versions lost, or
// tied within the noise margin, against that best; ranking them by their own medians would let
// noise promote them). A full profile is part of the rule too, once kloop profiles: today every
// version's profile is "missing" and the rule says so (profile_required = false).
// Ranked by the equal-weight geometric mean over the bench shapes of the per-shape median,
// then of the mean, then by the earliest iteration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/iteration_record.hpp"

namespace kloop::loop {

inline constexpr bool profile_required = false;  // becomes true when profiles exist (later issue)

struct ranked_version {
    int number = 0;
    double geomean_median_s = 0;
    double geomean_mean_s = 0;
};

// Why a version is not eligible; empty when it is.
[[nodiscard]] std::string ineligibility(const iteration_record& r);
[[nodiscard]] std::vector<ranked_version> rank_versions(const std::vector<iteration_record>& records);
// The first of rank_versions; nullopt when nothing is eligible (no baseline).
[[nodiscard]] std::optional<int> best_version(const std::vector<iteration_record>& records);
// One sentence stating the rule, for reports.
[[nodiscard]] std::string eligibility_rule_text();

}  // namespace kloop::loop
