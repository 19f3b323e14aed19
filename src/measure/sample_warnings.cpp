// kloop measure: warnings about a shape's samples (see sample_warnings.hpp).
#include "measure/sample_warnings.hpp"

#include <fmt/format.h>

namespace kloop::measure {

std::vector<sample_warning> clock_event_warning(int samples_with_events, int samples,
                                                const std::vector<std::string>& reasons) {
    if (samples_with_events <= 0) return {};
    std::string names;
    for (const auto& r : reasons) names += (names.empty() ? "" : ", ") + r;
    return {{"clock_events", fmt::format("{} of {} samples were taken while the GPU reported clock event reasons ({}): "
                                         "the clocks were held below what the chip can run",
                                         samples_with_events, samples, names)}};
}

std::vector<sample_warning> busy_machine_warning(bool busy, const std::string& load_description) {
    if (!busy) return {};
    return {{"busy_machine", "the machine was busy while this was timed (" + load_description +
                                 "): its numbers, and any verdict from them, may not hold on a quiet machine"}};
}

std::vector<sample_warning> sample_warnings(const sample_summary& s, const std::string& stop_reason, int discarded,
                                            const sample_warning_thresholds& t) {
    std::vector<sample_warning> out;
    if (s.n < t.min_samples)
        out.push_back({"few_samples", fmt::format("only {} sample{} (fewer than {}): the median is weak evidence", s.n,
                                                  s.n == 1 ? "" : "s", t.min_samples)});
    if (s.cv > t.max_cv)
        out.push_back({"high_cv", fmt::format("the samples spread {:.1f} % around their mean (more than {:.0f} %): "
                                              "something else was running, or the call's time varies",
                                              s.cv * 100, t.max_cv * 100)});
    if (stop_reason == "time_cap")
        out.push_back({"time_cap", "the time cap ended the shape before its spread converged (--max-time)"});
    else if (stop_reason == "sample_cap")
        out.push_back({"sample_cap", "the sample cap ended the shape before its spread converged"});
    if (discarded > 0)
        out.push_back({"throttled", fmt::format("{} sample{} taken on a throttled clock (SM clock below 75 % of its "
                                                "maximum) were discarded and retaken",
                                                discarded, discarded == 1 ? "" : "s")});
    return out;
}

}  // namespace kloop::measure
