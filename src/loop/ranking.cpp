// kloop loop: eligibility and ranking (see ranking.hpp).
#include "loop/ranking.hpp"

#include <algorithm>

namespace kloop::loop {

std::string ineligibility(const iteration_record& r) {
    if (!r.gate_pass) return "gate not green";
    if (r.gate_partial) return "partial gate (--gate-k)";
    if (!r.bench_ok || !geomean_median_s(r)) return "no successful bench";
    if (r.status == iteration_status::rejected) return "rejected";
    if (r.status == iteration_status::negative) return "negative: not faster than the best of its time";
    if (profile_required && r.profile_status != "full") return "no full profile";
    return "";
}

std::vector<ranked_version> rank_versions(const std::vector<iteration_record>& records) {
    std::vector<ranked_version> out;
    for (const auto& r : records)
        if (ineligibility(r).empty()) out.push_back({r.number, *geomean_median_s(r), geomean_mean_s(r).value_or(0)});
    std::stable_sort(out.begin(), out.end(), [](const ranked_version& a, const ranked_version& b) {
        if (a.geomean_median_s != b.geomean_median_s) return a.geomean_median_s < b.geomean_median_s;
        if (a.geomean_mean_s != b.geomean_mean_s) return a.geomean_mean_s < b.geomean_mean_s;
        return a.number < b.number;
    });
    return out;
}

std::optional<int> best_version(const std::vector<iteration_record>& records) {
    const auto ranked = rank_versions(records);
    if (ranked.empty()) return std::nullopt;
    return ranked.front().number;
}

std::string eligibility_rule_text() {
    return "eligible: full green gate, successful bench, and baseline or positive (beat the best of its time in an "
           "A/B); profile: not yet required (kloop does not profile yet; every profile is recorded as missing). "
           "Ranked by the geomean over bench shapes of the median, then of the mean, then the earliest iteration.";
}

}  // namespace kloop::loop
