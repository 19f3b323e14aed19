// kloop loop: eligibility and ranking (see ranking.hpp).
#include "loop/ranking.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kloop::loop {

eligibility_policy promotion_policy(bool allow_unprofiled) { return {!allow_unprofiled, false}; }

eligibility_policy ab_target_policy() { return {false, true}; }

std::string ineligibility(const iteration_record& r, const eligibility_policy& p) {
    if (!r.gate_pass) return "gate not green";
    if (r.gate_partial) return "partial gate (--gate-k)";
    if (!r.bench_ok || !geomean_median_s(r)) return "no successful bench";
    if (r.status == iteration_status::rejected) return "rejected";
    if (r.status == iteration_status::negative) return "negative: not faster than the best of its time";
    if (r.outpaced_by)
        return fmt::format("outpaced: its sibling {}, raced against the same best in the same round, was faster",
                           version_label(*r.outpaced_by));
    if (r.suspect && !(p.baseline_may_be_suspect && r.number == 0))
        return "suspect: " + (r.suspect_reasons.empty() ? std::string("the profile cannot explain its time")
                                                        : fmt::format("{}", fmt::join(r.suspect_reasons, "; "))) +
               " — re-check: fix the spec's cost formulas or the candidate, then iterate again";
    if (p.require_full_profile && r.profile_status != "full" && r.profile_status != "n/a")
        return "no full profile (profile " + r.profile_status + ": " + r.profile_note +
               ") — profile it where ncu works (`kloop profile … --set full`), or pass --allow-unprofiled";
    return "";
}

std::vector<ranked_version> rank_versions(const std::vector<iteration_record>& records, const eligibility_policy& p) {
    std::vector<ranked_version> out;
    for (const auto& r : records)
        if (ineligibility(r, p).empty()) out.push_back({r.number, *geomean_median_s(r), geomean_mean_s(r).value_or(0)});
    std::stable_sort(out.begin(), out.end(), [](const ranked_version& a, const ranked_version& b) {
        if (a.geomean_median_s != b.geomean_median_s) return a.geomean_median_s < b.geomean_median_s;
        if (a.geomean_mean_s != b.geomean_mean_s) return a.geomean_mean_s < b.geomean_mean_s;
        return a.number < b.number;
    });
    return out;
}

std::optional<int> best_version(const std::vector<iteration_record>& records, const eligibility_policy& p) {
    const auto ranked = rank_versions(records, p);
    if (ranked.empty()) return std::nullopt;
    return ranked.front().number;
}

std::string eligibility_rule_text(const eligibility_policy& p) {
    return std::string("eligible: full green gate, successful bench, baseline or positive (beat the best of its time in "
                       "an A/B) and not outpaced by a sibling of its round, not suspect (the profile explains its time); ") +
           (p.require_full_profile ? "a full Nsight Compute profile (CUDA versions). "
                                   : "profile: NOT required (--allow-unprofiled). ") +
           "Ranked by the geomean over bench shapes of the median, then of the mean, then the earliest iteration.";
}

}  // namespace kloop::loop
