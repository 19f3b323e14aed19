// kloop measure: the timer cross-check rule.
#include "measure/timer_agreement.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "measure/statistics.hpp"

namespace kloop::measure {

timer_agreement judge_timer(std::span<const double> samples, std::span<const double> windows,
                            const timer_calibration& calibration) {
    timer_agreement r;
    if (samples.empty() || samples.size() != windows.size()) {
        r.detail = "no checker windows paired with the samples";
        return r;
    }
    r.checked = true;
    std::vector<double> gaps(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        gaps[i] = windows[i] - samples[i];
        if (samples[i] > windows[i] * (1 + k_timer_fast_rel) + k_timer_fast_abs_s) {
            r.pass = false;
            r.detail = fmt::format("sample {} claims {:.3f} us, longer than the {:.3f} us the checker saw around the call",
                                   i, samples[i] * 1e6, windows[i] * 1e6);
            return r;
        }
    }
    r.median_sample_s = median_of(samples);
    r.low_gap_s = gaps.size() < 10 ? *std::min_element(gaps.begin(), gaps.end()) : summarize(gaps).p10;
    const double spread = std::max(0.0, calibration.overhead_p90_s - calibration.overhead_median_s);
    const double rel = gaps.size() < 10 ? k_timer_rel_slack_few : k_timer_rel_slack;
    r.allowed_gap_s = calibration.overhead_p90_s + k_timer_spread_factor * spread + calibration.slack_s +
                      rel * r.median_sample_s;
    r.pass = r.low_gap_s <= r.allowed_gap_s;
    r.detail = fmt::format("median sample {:.3f} us; even the closest checker windows are {:.3f} us longer "
                           "(allowed {:.3f} us: calibrated overhead p90 {:.3f} us)",
                           r.median_sample_s * 1e6, r.low_gap_s * 1e6, r.allowed_gap_s * 1e6,
                           calibration.overhead_p90_s * 1e6);
    if (!r.pass) r.detail = "the samples claim less time than the calls took: " + r.detail;
    return r;
}

}  // namespace kloop::measure
