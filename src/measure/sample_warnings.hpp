// kloop measure: warnings that keep a user from trusting a bad number.
//
// Responsibility: look at one timed shape's samples and how the stopping rule ended, and say,
// in words, what makes its median weak evidence: too few samples to trust (below the stopping
// rule's own minimum, e.g. a crash or a cap cut it short), a spread wider than max_cv, a cap that
// ended the shape before its spread converged (time_cap, sample_cap), samples discarded as taken
// on a throttled clock. A warning never changes a number or a verdict; it travels with them in
// the record and in the text (docs/measurement.md, "Warnings"). Pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "measure/statistics.hpp"

namespace kloop::measure {

struct sample_warning {
    std::string code;     // "few_samples" | "high_cv" | "time_cap" | "sample_cap" | "throttled" | "clock_events" | "busy_machine"
    std::string message;  // one sentence with the numbers
};

struct sample_warning_thresholds {
    std::size_t min_samples = 10;  // the stopping rule's default minimum
    double max_cv = 0.10;          // stdev / mean
};

// `stop_reason`: the stopping rule's word for how the shape ended ("converged", "plateau",
// "time_cap", "sample_cap"; anything else is not judged). `discarded`: samples retaken because
// the SM clock was below 75 % of its maximum.
// "clock_events" when some kept samples were taken while the GPU reported clock event reasons
// other than idle (a power cap, thermal slowdown, …: `reasons`, the distinct descriptions, e.g.
// "sw_power_cap"); nothing when `samples_with_events` is 0.
[[nodiscard]] std::vector<sample_warning> clock_event_warning(int samples_with_events, int samples,
                                                              const std::vector<std::string>& reasons);

// "busy_machine" when other work was runnable in enough of the timing's load samples
// (platform/host_load's report, described by `load_description`); nothing otherwise.
[[nodiscard]] std::vector<sample_warning> busy_machine_warning(bool busy, const std::string& load_description);

[[nodiscard]] std::vector<sample_warning> sample_warnings(const sample_summary& s, const std::string& stop_reason,
                                                          int discarded, const sample_warning_thresholds& t = {});

}  // namespace kloop::measure
