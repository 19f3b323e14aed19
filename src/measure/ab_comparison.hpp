// kloop measure: A/B verdicts from two sets of timing samples, and their geomean over shapes.
//
// Responsibility: decide whether a candidate is faster than a baseline, with an interval, as
// docs/measurement.md ("A/B verdicts") describes. Samples are durations (> 0); both sides must
// come from the same run (interleaved in one runner) — never compare numbers from two runs.
//   speedup = median(base) / median(cand)        (> 1: the candidate is faster)
//   interval: percentile bootstrap. `resamples` times, resample each side independently with
//     replacement (same sizes), take the ratio of the two medians; ci_low / ci_high are the
//     (1 - confidence)/2 and (1 + confidence)/2 percentiles of those ratios (linear
//     interpolation, measure/statistics). Deterministic: kloop::rng seeded with `seed`. A
//     replicate's median is drawn from the sorted sample directly (measure/bootstrap_median),
//     exactly the distribution of resampling every value, at a cost independent of its size.
//   verdict, with e = min_effect:
//     faster    ci_low  >= 1 + e
//     slower    ci_high <= 1 / (1 + e)
//     same      1/(1 + e) <= ci_low and ci_high <= 1 + e
//     ambiguous otherwise — and always when a side has fewer than min_samples samples, where a
//               bootstrap of the median says little.
// combine_geomean: the equal-weight geometric mean of the per-shape speedups,
//   exp(mean_s log(speedup_s)); each bootstrap resample resamples every shape's two sides and
//   takes the geomean of the resampled ratios, so the interval carries every shape's noise.
//   Same verdict rule. Inputs that are empty, non-finite or <= 0 throw std::invalid_argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kloop::measure {

enum class ab_verdict { faster, slower, same, ambiguous };

// "FASTER", "SLOWER", "SAME", "AMBIGUOUS"
[[nodiscard]] std::string to_string(ab_verdict v);
// Accepts the upper-case spellings; throws std::invalid_argument otherwise.
[[nodiscard]] ab_verdict ab_verdict_from_string(const std::string& s);

struct ab_config {
    double min_effect = 0.02;
    std::size_t resamples = 2000;
    double confidence = 0.95;
    std::uint64_t seed = 0x6b6c6f6f70;  // "kloop"
    // addition: fewer samples than this on either side (per shape) gives AMBIGUOUS
    std::size_t min_samples = 5;
    // addition: the runner may stop a shape once its verdict is settled (measure/early_verdict.hpp)
    bool early_verdict = true;
};

struct ab_result {
    double speedup = 1.0;  // median(base) / median(cand); > 1 means the candidate is faster
    double ci_low = 1.0;
    double ci_high = 1.0;
    ab_verdict verdict = ab_verdict::ambiguous;
};

[[nodiscard]] ab_result compare_samples(std::span<const double> base, std::span<const double> cand,
                                        const ab_config& config);

[[nodiscard]] ab_result combine_geomean(
    const std::vector<std::pair<std::vector<double>, std::vector<double>>>& per_shape_base_cand,
    const ab_config& config);

// The verdict rule alone, for an interval computed elsewhere.
[[nodiscard]] ab_verdict verdict_for(double ci_low, double ci_high, double min_effect);

}  // namespace kloop::measure
