// Unit under test: measure/bootstrap_median — a bootstrap replicate's median drawn from the
// sorted sample: its distribution against the exact one of resampling every value (enumerated),
// the Gamma draws' moments, determinism, and the edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "core/rng.hpp"
#include "measure/bootstrap_median.hpp"

using namespace kloop::measure;

namespace {

// The exact distribution of the median of a resample of xs (every one of n^n resamples,
// equally likely): value -> probability.
std::map<double, double> exact_resampled_medians(const std::vector<double>& xs) {
    const std::size_t n = xs.size();
    std::map<double, double> p;
    std::vector<std::size_t> idx(n, 0);
    double total = 0;
    for (;;) {
        std::vector<double> v;
        for (auto i : idx) v.push_back(xs[i]);
        std::sort(v.begin(), v.end());
        const double m = n % 2 == 1 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2.0;
        p[m] += 1;
        total += 1;
        std::size_t k = 0;
        while (k < n && ++idx[k] == n) idx[k++] = 0;
        if (k == n) break;
    }
    for (auto& [m, c] : p) c /= total;
    return p;
}

void expect_matches_exact(const std::vector<double>& sorted, std::uint64_t seed) {
    const auto exact = exact_resampled_medians(sorted);
    kloop::rng r(seed);
    const int draws = 400000;
    std::map<double, double> seen;
    for (int i = 0; i < draws; ++i) seen[bootstrap_median(sorted, r)] += 1.0 / draws;
    for (const auto& [m, p] : seen) EXPECT_TRUE(exact.count(m)) << "a median no resample can have: " << m;
    for (const auto& [m, p] : exact) {
        // 400 000 draws: a standard error below 0.0008 for every probability.
        EXPECT_NEAR(seen[m], p, 0.004) << "n = " << sorted.size() << ", median " << m;
    }
}

}  // namespace

TEST(BootstrapMedianTest, AnOddSampleFollowsTheResamplingDistributionExactly) {
    expect_matches_exact({1.0, 2.0, 3.0, 5.0, 8.0}, 11);
    expect_matches_exact({1.0, 1.0, 2.0, 7.0, 7.0, 9.0, 10.0}, 12);  // ties too
}

TEST(BootstrapMedianTest, AnEvenSampleFollowsTheResamplingDistributionExactly) {
    expect_matches_exact({1.0, 2.0, 4.0, 8.0}, 13);  // the mean of the middle two: midpoints appear
    expect_matches_exact({1.0, 3.0, 4.0, 6.0, 9.0, 12.0}, 14);
}

TEST(BootstrapMedianTest, GammaDrawsHaveTheirMoments) {
    kloop::rng r(5);
    for (double a : {1.0, 2.5, 40.0, 25000.0}) {
        const int n = 200000;
        double sum = 0, sum2 = 0;
        for (int i = 0; i < n; ++i) {
            const double g = gamma_draw(a, r);
            ASSERT_GT(g, 0.0);
            sum += g;
            sum2 += g * g;
        }
        const double mean = sum / n, var = sum2 / n - mean * mean;
        EXPECT_NEAR(mean, a, 5 * std::sqrt(a / n)) << a;          // Gamma(a, 1): mean a
        EXPECT_NEAR(var / a, 1.0, 0.03) << a;                      // and variance a
    }
    for (int i = 0; i < 1000; ++i) {
        const double b = beta_draw(3.0, 7.0, r);
        ASSERT_GT(b, 0.0);
        ASSERT_LT(b, 1.0);
    }
}

TEST(BootstrapMedianTest, DeterministicAndTheEdges) {
    const std::vector<double> xs{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0};
    kloop::rng a(99), b(99);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(bootstrap_median(xs, a), bootstrap_median(xs, b));
    kloop::rng r(1);
    EXPECT_EQ(bootstrap_median(std::vector<double>{4.5}, r), 4.5);
    const std::vector<double> same(1001, 2.0);
    EXPECT_EQ(bootstrap_median(same, r), 2.0);
    // A large sample: every replicate lies inside the sample's range and near its middle.
    std::vector<double> big(100000);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
    for (int i = 0; i < 200; ++i) {
        const double m = bootstrap_median(big, r);
        EXPECT_GE(m, 0.0);
        EXPECT_LE(m, 99999.0);
        EXPECT_NEAR(m, 49999.5, 1000.0);  // the median's bootstrap spread is ~158 positions
    }
}
