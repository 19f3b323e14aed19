// kloop measure: the noise floor of A/B timing — a version timed against itself, N times.
//
// Responsibility: the statistics of `kloop noise`. Every FASTER or SLOWER verdict of A against A
// is false by construction; per shape, across the runs, this gathers how far the measured ratio
// strays from 1 (the noise floor: the median |log speedup|, as a fraction; the largest
// deviation), how wide the intervals are (median half-width), the verdict counts, and the share
// of false verdicts over every shape verdict, held to allowed_false_verdict_rate. Pure: the runs
// come in as verdicts (measure/ab_comparison), in the same shape order every run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "measure/ab_comparison.hpp"

namespace kloop::measure {

inline constexpr double allowed_false_verdict_rate = 0.05;

struct verdict_counts {
    int faster = 0, slower = 0, same = 0, ambiguous = 0;
    void add(ab_verdict v);
    [[nodiscard]] int total() const { return faster + slower + same + ambiguous; }
    [[nodiscard]] int false_ones() const { return faster + slower; }  // of A against A
};

// One shape of one run: its verdict, or none (a failed shape).
struct noise_shape_run {
    std::string mode, shape;
    std::optional<ab_result> verdict;
};

struct noise_run {
    std::optional<ab_result> overall;  // the geomean verdict
    std::vector<noise_shape_run> shapes;
};

struct shape_noise {
    std::string mode, shape;
    std::vector<double> speedups;
    std::vector<double> half_widths;   // of the interval, as a fraction of 1
    verdict_counts verdicts;
    int failed = 0;                    // runs without a verdict for this shape
    [[nodiscard]] double median_abs_log_speedup() const;  // 0 without runs
    [[nodiscard]] double noise_floor() const;           // expm1(median |log speedup|)
    [[nodiscard]] double max_deviation() const;         // expm1(max |log speedup|)
    [[nodiscard]] double median_half_width() const;     // 0 without runs
    [[nodiscard]] double false_verdict_rate() const;    // 0 without verdicts
};

struct noise_summary {
    std::vector<shape_noise> shapes;
    verdict_counts geomean_verdicts;
    int shape_verdicts = 0;
    int false_verdicts = 0;
    [[nodiscard]] double false_verdict_rate() const;    // over every shape verdict; 0 without
    [[nodiscard]] bool within_allowed() const;          // some verdicts, rate <= allowed
};

[[nodiscard]] noise_summary summarize_noise(const std::vector<noise_run>& runs);

}  // namespace kloop::measure
