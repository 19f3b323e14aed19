// kloop eval: what a timing's per-sample info says about the device's clocks.
#include "eval/sample_clock_facts.hpp"

#include <algorithm>

#include "measure/statistics.hpp"

namespace kloop::eval {

sample_clock_facts clock_facts_of(const nlohmann::json& sample_info) {
    sample_clock_facts f;
    if (!sample_info.is_array()) return f;
    std::vector<double> clocks;
    for (const auto& info : sample_info) {
        if (!info.is_object()) continue;
        if (const auto it = info.find("sm_clock_mhz"); it != info.end() && it->is_number())
            clocks.push_back(it->get<double>());
        if (const auto it = info.find("reasons"); it != info.end() && it->is_string()) {
            ++f.samples_with_events;
            const auto why = it->get<std::string>();
            if (std::find(f.reasons.begin(), f.reasons.end(), why) == f.reasons.end()) f.reasons.push_back(why);
        }
    }
    if (!clocks.empty()) f.sm_clock_mhz_median = measure::summarize(clocks).median;
    return f;
}

std::vector<measure::sample_warning> timing_warnings(const std::vector<double>& samples_s,
                                                     const std::string& stop_reason, int discarded,
                                                     const sample_clock_facts& clocks) {
    if (samples_s.empty()) return {};
    auto warnings = measure::sample_warnings(measure::summarize(samples_s), stop_reason, discarded);
    for (auto& w : measure::clock_event_warning(clocks.samples_with_events, static_cast<int>(samples_s.size()),
                                                clocks.reasons))
        warnings.push_back(std::move(w));
    return warnings;
}

}  // namespace kloop::eval
