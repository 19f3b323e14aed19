// kloop bench: the A/B interval's cost against the sample count, and its agreement with the
// bootstrap that resamples every value.
//
//   kloop-bench-ab-bootstrap [--trials N]
//
// For sample counts from 100 to 100 000 a side (log-normal timings, 3 % spread, the candidate
// 1 % faster), times measure::compare_samples (each replicate's median drawn from the sorted
// sample, measure/bootstrap_median) and, side by side on the same samples, the textbook
// bootstrap written out here (draw n values with replacement, take their median), 2000 replicates
// each; prints the seconds per interval, their ratio, and both intervals. The two draw different
// random numbers, so their bounds differ by bootstrap noise only; over --trials sample sets the
// mean absolute difference of the bounds is printed next to the interval's half-width. Not a
// test: figures go to docs/perf.md with the machine and the date.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "measure/ab_comparison.hpp"
#include "measure/statistics.hpp"

namespace {

using kloop::rng;
using clock_type = std::chrono::steady_clock;

double median_inplace(std::vector<double>& v) {
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return lower + (upper - lower) / 2.0;
}

// The textbook percentile bootstrap of median(base) / median(cand).
std::pair<double, double> resample_every_value(const std::vector<double>& base, const std::vector<double>& cand,
                                               std::size_t replicates, std::uint64_t seed) {
    rng r(seed);
    std::vector<double> ratios(replicates), scratch;
    for (auto& ratio : ratios) {
        double m[2];
        for (int side = 0; side < 2; ++side) {
            const auto& xs = side == 0 ? base : cand;
            scratch.resize(xs.size());
            for (auto& v : scratch) v = xs[r.next_below(xs.size())];
            m[side] = median_inplace(scratch);
        }
        ratio = m[0] / m[1];
    }
    std::sort(ratios.begin(), ratios.end());
    return {kloop::measure::percentile_sorted(ratios, 0.025), kloop::measure::percentile_sorted(ratios, 0.975)};
}

std::vector<double> timings(std::size_t n, double median, rng& r) {
    std::vector<double> v(n);
    for (auto& x : v) x = median * std::exp(0.03 * r.normal());
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    int trials = 5;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--trials") trials = std::max(1, std::atoi(argv[i + 1]));
    std::printf("%8s  %12s  %12s  %7s  %10s  %10s  %24s  %24s\n", "n/side", "direct s", "resample s", "ratio",
                "|d bound|", "half-width", "direct interval", "resampled interval");
    for (std::size_t n : {100, 1000, 10000, 50000, 100000}) {
        double t_direct = 0, t_resample = 0, diff = 0, half = 0;
        kloop::measure::ab_result last{};
        std::pair<double, double> last_r{};
        for (int t = 0; t < trials; ++t) {
            rng data(kloop::derive_seed(0x6b6c6f6f70, "bench-ab:" + std::to_string(n) + ":" + std::to_string(t)));
            const auto base = timings(n, 1.00e-4, data);
            const auto cand = timings(n, 0.99e-4, data);
            kloop::measure::ab_config cfg;
            const auto t0 = clock_type::now();
            last = kloop::measure::compare_samples(base, cand, cfg);
            const auto t1 = clock_type::now();
            last_r = resample_every_value(base, cand, cfg.resamples, cfg.seed);
            const auto t2 = clock_type::now();
            t_direct += std::chrono::duration<double>(t1 - t0).count();
            t_resample += std::chrono::duration<double>(t2 - t1).count();
            diff += (std::fabs(last.ci_low - last_r.first) + std::fabs(last.ci_high - last_r.second)) / 2.0;
            half += (last.ci_high - last.ci_low) / 2.0;
        }
        std::printf("%8zu  %12.6f  %12.6f  %7.1f  %10.5f  %10.5f  [%9.5f, %9.5f]  [%9.5f, %9.5f]\n", n,
                    t_direct / trials, t_resample / trials, t_resample / t_direct, diff / trials, half / trials,
                    last.ci_low, last.ci_high, last_r.first, last_r.second);
    }
    return 0;
}
