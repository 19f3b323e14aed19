// kloop measure: bootstrap A/B comparison of medians.
#include "measure/ab_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "measure/bootstrap_median.hpp"
#include "measure/statistics.hpp"

namespace kloop::measure {

namespace {

void validate(std::span<const double> xs, const char* side) {
    if (xs.empty()) throw std::invalid_argument(std::string("A/B comparison: no ") + side + " samples");
    for (double x : xs)
        if (!std::isfinite(x) || x <= 0.0)
            throw std::invalid_argument(std::string("A/B comparison: ") + side + " samples must be finite and > 0");
}

void validate_config(const ab_config& c) {
    if (c.resamples == 0) throw std::invalid_argument("A/B comparison: resamples must be > 0");
    if (!(c.confidence > 0.0 && c.confidence < 1.0))
        throw std::invalid_argument("A/B comparison: confidence must be in (0, 1)");
    if (!(c.min_effect >= 0.0)) throw std::invalid_argument("A/B comparison: min_effect must be >= 0");
}

struct shape_view {
    std::span<const double> base;
    std::span<const double> cand;
};

std::vector<double> sorted_copy(std::span<const double> xs) {
    std::vector<double> v(xs.begin(), xs.end());
    std::sort(v.begin(), v.end());
    return v;
}

// Geomean speedup of the given shapes with a joint percentile bootstrap interval.
ab_result bootstrap(const std::vector<shape_view>& shapes, const ab_config& config) {
    validate_config(config);
    bool enough = true;
    double log_sum = 0.0;
    for (const auto& s : shapes) {
        validate(s.base, "base");
        validate(s.cand, "candidate");
        if (s.base.size() < config.min_samples || s.cand.size() < config.min_samples) enough = false;
        log_sum += portable::log(median_of(s.base) / median_of(s.cand));
    }
    // One shape: the plain ratio (no log/exp round trip). Several: the geomean, through
    // kloop::portable so intervals are bit-identical on every machine.
    const bool single = shapes.size() == 1;
    const double k = static_cast<double>(shapes.size());

    ab_result res;
    res.speedup = single ? median_of(shapes[0].base) / median_of(shapes[0].cand) : portable::exp(log_sum / k);
    // Each replicate's medians are drawn from the sorted samples directly (bootstrap_median.hpp):
    // the same bootstrap as resampling every value, at a cost independent of the sample count.
    std::vector<std::vector<double>> sorted;
    for (const auto& s : shapes) {
        sorted.push_back(sorted_copy(s.base));
        sorted.push_back(sorted_copy(s.cand));
    }
    rng r(config.seed);
    std::vector<double> ratios(config.resamples);
    for (auto& ratio : ratios) {
        double ls = 0.0;
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const double mb = bootstrap_median(sorted[2 * i], r);
            const double mc = bootstrap_median(sorted[2 * i + 1], r);
            if (single) ratio = mb / mc;
            else ls += portable::log(mb / mc);
        }
        if (!single) ratio = portable::exp(ls / k);
    }
    std::sort(ratios.begin(), ratios.end());
    const double alpha = (1.0 - config.confidence) / 2.0;
    res.ci_low = percentile_sorted(ratios, alpha);
    res.ci_high = percentile_sorted(ratios, 1.0 - alpha);
    res.verdict = enough ? verdict_for(res.ci_low, res.ci_high, config.min_effect) : ab_verdict::ambiguous;
    return res;
}

}  // namespace

std::string to_string(ab_verdict v) {
    switch (v) {
        case ab_verdict::faster: return "FASTER";
        case ab_verdict::slower: return "SLOWER";
        case ab_verdict::same: return "SAME";
        case ab_verdict::ambiguous: return "AMBIGUOUS";
    }
    return "?";
}

ab_verdict ab_verdict_from_string(const std::string& s) {
    for (auto v : {ab_verdict::faster, ab_verdict::slower, ab_verdict::same, ab_verdict::ambiguous})
        if (to_string(v) == s) return v;
    throw std::invalid_argument("unknown A/B verdict '" + s + "'");
}

ab_verdict verdict_for(double ci_low, double ci_high, double min_effect) {
    const double up = 1.0 + min_effect;
    const double down = 1.0 / up;
    if (ci_low >= up) return ab_verdict::faster;
    if (ci_high <= down) return ab_verdict::slower;
    if (ci_low >= down && ci_high <= up) return ab_verdict::same;
    return ab_verdict::ambiguous;
}

ab_result compare_samples(std::span<const double> base, std::span<const double> cand, const ab_config& config) {
    return bootstrap({shape_view{base, cand}}, config);
}

ab_result combine_geomean(const std::vector<std::pair<std::vector<double>, std::vector<double>>>& per_shape_base_cand,
                          const ab_config& config) {
    if (per_shape_base_cand.empty()) throw std::invalid_argument("A/B geomean: no shapes");
    std::vector<shape_view> shapes;
    shapes.reserve(per_shape_base_cand.size());
    for (const auto& [b, c] : per_shape_base_cand) shapes.push_back({b, c});
    return bootstrap(shapes, config);
}

}  // namespace kloop::measure
