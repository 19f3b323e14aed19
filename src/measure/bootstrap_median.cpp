// kloop measure: one bootstrap replicate of a sample's median (see bootstrap_median.hpp).
#include "measure/bootstrap_median.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace kloop::measure {

double gamma_draw(double a, rng& r) {
    const double d = a - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        double x = 0.0;
        double v = 0.0;
        do {
            x = r.normal();
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = r.uniform01();
        const double x2 = x * x;
        if (u < 1.0 - 0.0331 * (x2 * x2)) return d * v;
        if (u > 0.0 && portable::log(u) < 0.5 * x2 + d * (1.0 - v + portable::log(v))) return d * v;
    }
}

double beta_draw(double a, double b, rng& r) {
    const double x = gamma_draw(a, r);
    const double y = gamma_draw(b, r);
    return x / (x + y);
}

namespace {

// x[floor(n u)] for u in [0, 1], clamped to the last index (u = 1 only through rounding).
double at_quantile(std::span<const double> sorted, double u) {
    const double n = static_cast<double>(sorted.size());
    const double i = std::floor(n * u);
    const std::size_t k = i <= 0.0 ? 0 : std::min(static_cast<std::size_t>(i), sorted.size() - 1);
    return sorted[k];
}

}  // namespace

double bootstrap_median(std::span<const double> sorted, rng& r) {
    const std::size_t n = sorted.size();
    if (n == 1) return sorted[0];
    const std::size_t k = (n + 1) / 2;  // the lower middle rank, 1-based
    const double a = static_cast<double>(k);
    const double b = static_cast<double>(n - k + 1);
    const double lower = beta_draw(a, b, r);
    if (n % 2 == 1) return at_quantile(sorted, lower);
    const double v = 1.0 - r.uniform01();  // (0, 1]
    const double upper = lower + (1.0 - lower) * (1.0 - portable::exp(portable::log(v) / static_cast<double>(n - k)));
    const double lo = at_quantile(sorted, lower);
    const double hi = at_quantile(sorted, upper);
    return lo + (hi - lo) / 2.0;
}

}  // namespace kloop::measure
