// kloop measure: summary statistics of a set of timing samples.
//
// Responsibility: the per-shape numbers kloop reports (docs/measurement.md, "Statistics").
// Definitions for samples x_1..x_n (sorted: x_(0) <= ... <= x_(n-1)):
//   mean    sum x / n
//   stdev   sample standard deviation, sqrt(sum (x - mean)^2 / (n - 1)); 0 when n == 1
//   cv      stdev / mean (0 when stdev is 0; +inf when mean is 0 and stdev is not)
//   percentile p in [0, 1]: linear interpolation between closest ranks (NumPy's default
//           "linear", R type 7): h = (n - 1) p, value = x_(floor h) + (h - floor h) *
//           (x_(floor h + 1) - x_(floor h)). So median = p50, q1 = p25, q3 = p75,
//           iqr = q3 - q1, and the median of an even count is the mean of the middle two.
// Empty input, NaN/Inf samples, or p outside [0, 1] throw std::invalid_argument.
#pragma once

#include <cstddef>
#include <span>

namespace kloop::measure {

struct sample_summary {
    std::size_t n = 0;
    double median = 0;
    double mean = 0;
    double stdev = 0;
    double min = 0;
    double max = 0;
    double p10 = 0;
    double p90 = 0;
    double q1 = 0;
    double q3 = 0;
    double iqr = 0;
    double cv = 0;
};

[[nodiscard]] sample_summary summarize(std::span<const double> samples);
[[nodiscard]] double median_of(std::span<const double> samples);
[[nodiscard]] double percentile_of(std::span<const double> samples, double p);

// percentile_of on already sorted samples (no copy); the caller guarantees the order.
[[nodiscard]] double percentile_sorted(std::span<const double> sorted, double p);

}  // namespace kloop::measure
