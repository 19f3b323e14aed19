// kloop measure: holding a candidate's timer against a clock it cannot reach.
//
// Responsibility: the rule behind the `timer_cross_check` integrity check. A candidate's
// samples are taken in its own process (runner/candidate_host), where its code could patch the
// clock; around every timed call the checker, another process, reads its own clock (the window:
// waking the host, the request, the call, the reply). For an honest timer every gap
// (window − sample) is the protocol's overhead, which the checker calibrated on kloop's own
// empty entry point before any candidate code was loaded. A timer that reports a fraction of the
// real time leaves the rest in the gap of every sample; a busy machine only delays some of them
// (a process woken late), so the rule looks at the smallest gaps. Per timed shape:
//   - no sample may exceed its window by more than 5 µs + 1 % (a timer running fast);
//   - the low gap (the 10th percentile of the gaps; the smallest with fewer than 10 samples) may
//     exceed the calibration's p90 overhead by at most
//       allowed = 3 × (p90 − median of the calibration) + slack + 10 % × the median sample,
//     where slack is 100 µs (400 µs for the Python worker's hosts, timer_calibration::slack_s);
//     beyond that every sample claims less time than its call took. Below 10 samples (a slow call
//     under the stopping rule's time cap) the 10 % is 25 %: a handful of calls on a busy machine
//     may all have been woken late.
// So a forgery that hides more than about a tenth of a call is caught, on a busy machine too;
// one below it is not (docs/security.md says so).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace kloop::measure {

struct timer_calibration {
    double overhead_median_s = 0;
    double overhead_p90_s = 0;
    // The rule's constant allowance. The checker that calibrated may set another (its
    // "slack_s"): the Python worker does, since a Python request's interpreter work outside the
    // sample grows after a sample's cache flush beyond what its calibration sees.
    double slack_s = 100e-6;
};

struct timer_agreement {
    bool checked = false;          // samples and windows paired up
    bool pass = true;
    double median_sample_s = 0;
    double low_gap_s = 0;          // p10 (min below 10 samples) of window - sample
    double allowed_gap_s = 0;      // calibration p90 + the allowance above
    std::string detail;            // one sentence, with the numbers
};

inline constexpr double k_timer_fast_abs_s = 5e-6;
inline constexpr double k_timer_fast_rel = 0.01;
inline constexpr double k_timer_spread_factor = 3.0;
inline constexpr double k_timer_rel_slack = 0.10;
inline constexpr double k_timer_rel_slack_few = 0.25;   // below 10 samples
// A series with windows is not ended by a cap before it has this many (the job's
// bench_item::timer_min_windows, which both runners read): on a machine whose every core is busy, waking a process can wait a
// scheduler slice (milliseconds), so any one honest window may be far longer than its sample;
// the smallest of five is not, unless every call waited.
inline constexpr std::size_t k_timer_min_windows = 5;

// `samples` and `windows` are paired (same length, same order); a mismatch is !checked.
[[nodiscard]] timer_agreement judge_timer(std::span<const double> samples, std::span<const double> windows,
                                          const timer_calibration& calibration);

}  // namespace kloop::measure
