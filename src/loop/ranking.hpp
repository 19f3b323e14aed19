// kloop loop: which version is the best — eligibility and ranking.
//
// Responsibility: the selection rule behind `kloop best`, the "current best" every `kloop
// iterate` is compared against, and the version `kloop report` promotes.
// Eligible: a full (not --gate-k) green gate, a successful bench, and status baseline or
// positive — a version the A/B showed to beat the best of its time (negative versions lost, or
// tied within the noise margin, against that best; ranking them by their own medians would let
// noise promote them), not outpaced by a sibling of its `kloop run --parallel` round (the sibling
// with the larger speedup against the same best is the one promoted: loop/sibling_choice) — and not SUSPECT (the profile cannot explain its time: eval/profile_step).
// For promotion (`kloop best`, `kloop report`) a CUDA version must also carry a full Nsight
// Compute profile (the seed's rule) unless --allow-unprofiled, which the final summary states;
// the A/B target of `kloop iterate` needs no profile (a machine without ncu can still loop), and
// a suspect baseline v0 stays the target (something must be beaten).
// Ranked by the equal-weight geometric mean over the bench shapes of the per-shape median,
// then of the mean, then by the earliest iteration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/record/iteration_record.hpp"

namespace kloop::loop {

struct eligibility_policy {
    bool require_full_profile = true;   // GPU versions only ("n/a" where profile_unavailable says why)
    bool baseline_may_be_suspect = false;
};
// `kloop best` / `kloop report`: the promotion rule.
[[nodiscard]] eligibility_policy promotion_policy(bool allow_unprofiled);
// `kloop iterate`: the version a candidate is compared against.
[[nodiscard]] eligibility_policy ab_target_policy();

struct ranked_version {
    int number = 0;
    double geomean_median_s = 0;
    double geomean_mean_s = 0;
};

// Why a version is not eligible; empty when it is.
[[nodiscard]] std::string ineligibility(const iteration_record& r, const eligibility_policy& p);
[[nodiscard]] std::vector<ranked_version> rank_versions(const std::vector<iteration_record>& records,
                                                        const eligibility_policy& p);
// The first of rank_versions; nullopt when nothing is eligible (no baseline).
[[nodiscard]] std::optional<int> best_version(const std::vector<iteration_record>& records, const eligibility_policy& p);
// One sentence stating the rule, for reports.
[[nodiscard]] std::string eligibility_rule_text(const eligibility_policy& p);

}  // namespace kloop::loop
