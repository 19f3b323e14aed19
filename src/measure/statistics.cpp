// kloop measure: summary statistics.
#include "measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace kloop::measure {

namespace {

std::vector<double> sorted_copy(std::span<const double> samples, const char* what) {
    if (samples.empty()) throw std::invalid_argument(std::string(what) + ": no samples");
    for (double x : samples)
        if (!std::isfinite(x)) throw std::invalid_argument(std::string(what) + ": non-finite sample");
    std::vector<double> v(samples.begin(), samples.end());
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

double percentile_sorted(std::span<const double> sorted, double p) {
    if (sorted.empty()) throw std::invalid_argument("percentile: no samples");
    if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("percentile: p must be in [0, 1]");
    const double h = static_cast<double>(sorted.size() - 1) * p;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    if (lo + 1 >= sorted.size()) return sorted.back();
    const double frac = h - static_cast<double>(lo);
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double percentile_of(std::span<const double> samples, double p) {
    if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("percentile: p must be in [0, 1]");
    const auto v = sorted_copy(samples, "percentile");
    return percentile_sorted(v, p);
}

double median_of(std::span<const double> samples) { return percentile_of(samples, 0.5); }

sample_summary summarize(std::span<const double> samples) {
    const auto v = sorted_copy(samples, "summarize");
    sample_summary s;
    s.n = v.size();
    double sum = 0.0;
    for (double x : v) sum += x;
    s.mean = sum / static_cast<double>(s.n);
    // Two-pass variance: no cancellation, samples are few enough to walk twice.
    double ss = 0.0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = s.n > 1 ? std::sqrt(ss / static_cast<double>(s.n - 1)) : 0.0;
    s.min = v.front();
    s.max = v.back();
    s.median = percentile_sorted(v, 0.5);
    s.p10 = percentile_sorted(v, 0.10);
    s.p90 = percentile_sorted(v, 0.90);
    s.q1 = percentile_sorted(v, 0.25);
    s.q3 = percentile_sorted(v, 0.75);
    s.iqr = s.q3 - s.q1;
    if (s.stdev == 0.0) s.cv = 0.0;
    else if (s.mean == 0.0) s.cv = std::numeric_limits<double>::infinity();
    else s.cv = s.stdev / std::fabs(s.mean);
    return s;
}

}  // namespace kloop::measure
