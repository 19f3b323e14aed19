// kloop measure: the early verdict (see early_verdict.hpp).
#include "measure/early_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kloop::measure {

namespace {

// Phi^-1(p) for p in (0.5, 1), by bisection on erfc: 80 halvings are below double precision.
double normal_quantile(double p) {
    double lo = 0.0, hi = 40.0;
    for (int i = 0; i < 80; ++i) {
        const double mid = 0.5 * (lo + hi);
        if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

struct interval {
    double lo, hi;
};

// The order-statistic interval of the median; none when the ranks fall outside the sample.
std::optional<interval> median_interval(std::span<const double> x, double z) {
    const double n = static_cast<double>(x.size());
    const auto r = static_cast<long long>(std::floor((n - z * std::sqrt(n)) / 2.0));
    const auto s = static_cast<long long>(std::ceil(1.0 + (n + z * std::sqrt(n)) / 2.0));
    if (r < 1 || s > static_cast<long long>(x.size())) return std::nullopt;
    std::vector<double> v(x.begin(), x.end());
    std::sort(v.begin(), v.end());
    return interval{v[static_cast<std::size_t>(r - 1)], v[static_cast<std::size_t>(s - 1)]};
}

}  // namespace

early_verdict_config early_verdict_for(const ab_config& ab, double stop_min_time_s) {
    early_verdict_config e;
    e.enabled = ab.early_verdict;
    e.min_effect = ab.min_effect;
    e.confidence = ab.confidence;
    e.min_time_s = std::min(e.min_time_s, stop_min_time_s);
    return e;
}

bool is_early_verdict_look(std::size_t n, const early_verdict_config& c) {
    if (c.first_look <= 0) return false;
    const auto first = static_cast<std::size_t>(c.first_look);
    if (n < first || n % first != 0) return false;
    const std::size_t m = n / first;
    return (m & (m - 1)) == 0;
}

double early_verdict_z(const early_verdict_config& c) {
    const double a = (1.0 - c.confidence) / std::max(1, c.max_looks) / 2.0;
    return normal_quantile(1.0 - a / 2.0);
}

std::optional<ab_verdict> settled_verdict(std::span<const double> base, std::span<const double> cand,
                                          const early_verdict_config& c) {
    if (!c.enabled) return std::nullopt;
    const double z = early_verdict_z(c);
    const auto b = median_interval(base, z);
    const auto k = median_interval(cand, z);
    if (!b || !k || !(k->lo > 0.0) || !(b->lo > 0.0)) return std::nullopt;
    const auto v = verdict_for(b->lo / k->hi, b->hi / k->lo, c.min_effect);
    if (v == ab_verdict::ambiguous) return std::nullopt;
    return v;
}

}  // namespace kloop::measure
