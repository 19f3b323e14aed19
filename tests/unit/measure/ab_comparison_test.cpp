// Unit under test: measure/ab_comparison — bootstrap verdicts on synthetic lognormal samples,
// false-verdict rates, heavy tails, and the geomean over shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/rng.hpp"
#include "measure/ab_comparison.hpp"

using namespace kloop::measure;

namespace {

// n samples of median `median` with multiplicative lognormal noise of log-stdev `sigma`.
std::vector<double> lognormal(kloop::rng& r, std::size_t n, double median, double sigma) {
    std::vector<double> v(n);
    for (auto& x : v) x = median * std::exp(sigma * r.normal());
    return v;
}

// As lognormal, with each sample independently replaced by a 3x outlier with probability `p`.
std::vector<double> with_outliers(kloop::rng& r, std::size_t n, double median, double sigma, double p) {
    auto v = lognormal(r, n, median, sigma);
    for (auto& x : v)
        if (r.uniform01() < p) x *= 3.0;
    return v;
}

}  // namespace

TEST(AbComparisonTest, TwentyPercentShiftsAreFound) {
    kloop::rng r(1);
    const auto base = lognormal(r, 50, 1e-3, 0.05);
    const auto faster = lognormal(r, 50, 1e-3 / 1.2, 0.05);
    const auto slower = lognormal(r, 50, 1e-3 * 1.2, 0.05);
    const ab_config c;
    const auto f = compare_samples(base, faster, c);
    EXPECT_EQ(f.verdict, ab_verdict::faster);
    EXPECT_NEAR(f.speedup, 1.2, 0.05);
    EXPECT_LE(f.ci_low, f.speedup);
    EXPECT_GE(f.ci_high, f.speedup);
    const auto s = compare_samples(base, slower, c);
    EXPECT_EQ(s.verdict, ab_verdict::slower);
    EXPECT_NEAR(s.speedup, 1.0 / 1.2, 0.05);
}

TEST(AbComparisonTest, FivePercentShiftsAreFound) {
    kloop::rng r(2);
    int found = 0;
    for (int rep = 0; rep < 20; ++rep) {
        const auto base = lognormal(r, 50, 1e-3, 0.02);  // 2 % noise, typical of a GPU kernel
        const auto faster = lognormal(r, 50, 1e-3 / 1.05, 0.02);
        const auto slower = lognormal(r, 50, 1e-3 * 1.05, 0.02);
        found += compare_samples(base, faster, ab_config{}).verdict == ab_verdict::faster;
        found += compare_samples(base, slower, ab_config{}).verdict == ab_verdict::slower;
    }
    EXPECT_GE(found, 38);  // of 40
}

TEST(AbComparisonTest, AVersusARarelyGivesAVerdict) {
    kloop::rng r(3);
    ab_config c;
    c.resamples = 1000;
    int false_verdicts = 0;
    int same = 0;
    for (int rep = 0; rep < 200; ++rep) {
        const auto a = lognormal(r, 50, 1e-3, 0.02);
        const auto b = lognormal(r, 50, 1e-3, 0.02);
        const auto v = compare_samples(a, b, c).verdict;
        false_verdicts += v == ab_verdict::faster || v == ab_verdict::slower;
        same += v == ab_verdict::same;
    }
    EXPECT_LE(false_verdicts, 10);  // <= 5 %
    EXPECT_GE(same, 100);           // with 2 % noise and a 2 % margin, mostly SAME
}

TEST(AbComparisonTest, HeavyTailsDoNotRaiseFalseVerdicts) {
    kloop::rng r(4);
    ab_config c;
    c.resamples = 1000;
    int false_verdicts = 0;
    for (int rep = 0; rep < 200; ++rep) {
        const auto a = with_outliers(r, 50, 1e-3, 0.02, 0.05);
        const auto b = with_outliers(r, 50, 1e-3, 0.02, 0.05);
        const auto v = compare_samples(a, b, c).verdict;
        false_verdicts += v == ab_verdict::faster || v == ab_verdict::slower;
    }
    EXPECT_LE(false_verdicts, 10);
}

TEST(AbComparisonTest, HighNoiseSmallShiftIsAmbiguous) {
    kloop::rng r(5);
    const auto base = lognormal(r, 20, 1e-3, 0.3);
    const auto cand = lognormal(r, 20, 1e-3 / 1.03, 0.3);
    EXPECT_EQ(compare_samples(base, cand, ab_config{}).verdict, ab_verdict::ambiguous);
}

TEST(AbComparisonTest, DeterministicForAGivenSeed) {
    kloop::rng r(6);
    const auto a = lognormal(r, 30, 1.0, 0.1);
    const auto b = lognormal(r, 30, 1.0, 0.1);
    const auto x = compare_samples(a, b, ab_config{});
    const auto y = compare_samples(a, b, ab_config{});
    EXPECT_EQ(x.ci_low, y.ci_low);
    EXPECT_EQ(x.ci_high, y.ci_high);
    ab_config other;
    other.seed = 1;
    EXPECT_NE(compare_samples(a, b, other).ci_low, x.ci_low);
}

TEST(AbComparisonTest, TooFewSamplesIsAmbiguous) {
    const std::vector<double> base{2.0, 2.0, 2.0};
    const std::vector<double> cand{1.0, 1.0, 1.0};
    const auto res = compare_samples(base, cand, ab_config{});
    EXPECT_DOUBLE_EQ(res.speedup, 2.0);
    EXPECT_EQ(res.verdict, ab_verdict::ambiguous);
}

TEST(AbComparisonTest, VerdictRuleBoundaries) {
    EXPECT_EQ(verdict_for(1.02, 1.5, 0.02), ab_verdict::faster);
    EXPECT_EQ(verdict_for(1.019, 1.5, 0.02), ab_verdict::ambiguous);
    EXPECT_EQ(verdict_for(0.5, 1.0 / 1.02, 0.02), ab_verdict::slower);
    EXPECT_EQ(verdict_for(0.99, 1.01, 0.02), ab_verdict::same);
    EXPECT_EQ(verdict_for(0.97, 1.01, 0.02), ab_verdict::ambiguous);
    EXPECT_EQ(to_string(ab_verdict::faster), "FASTER");
    EXPECT_EQ(to_string(ab_verdict::ambiguous), "AMBIGUOUS");
    EXPECT_EQ(ab_verdict_from_string("SAME"), ab_verdict::same);
    EXPECT_THROW((void)ab_verdict_from_string("same"), std::invalid_argument);
}

TEST(AbComparisonTest, GeomeanOfTwoAndHalfIsOne) {
    kloop::rng r(7);
    std::vector<std::pair<std::vector<double>, std::vector<double>>> shapes;
    shapes.emplace_back(lognormal(r, 50, 2.0, 0.01), lognormal(r, 50, 1.0, 0.01));  // speedup 2
    shapes.emplace_back(lognormal(r, 50, 1.0, 0.01), lognormal(r, 50, 2.0, 0.01));  // speedup 0.5
    const auto g = combine_geomean(shapes, ab_config{});
    EXPECT_NEAR(g.speedup, 1.0, 0.01);
    EXPECT_LE(g.ci_low, g.speedup);
    EXPECT_GE(g.ci_high, g.speedup);
    EXPECT_EQ(g.verdict, ab_verdict::same);
}

TEST(AbComparisonTest, GeomeanFindsAConsistentSpeedup) {
    kloop::rng r(8);
    std::vector<std::pair<std::vector<double>, std::vector<double>>> shapes;
    for (double t : {1e-4, 1e-3, 1e-2}) shapes.emplace_back(lognormal(r, 40, t, 0.02), lognormal(r, 40, t / 1.1, 0.02));
    const auto g = combine_geomean(shapes, ab_config{});
    EXPECT_NEAR(g.speedup, 1.1, 0.02);
    EXPECT_EQ(g.verdict, ab_verdict::faster);
}

TEST(AbComparisonTest, RejectsBadInput) {
    const std::vector<double> ok{1.0, 2.0, 3.0, 4.0, 5.0};
    const std::vector<double> empty;
    const std::vector<double> negative{1.0, -1.0, 1.0, 1.0, 1.0};
    EXPECT_THROW((void)compare_samples(ok, empty, ab_config{}), std::invalid_argument);
    EXPECT_THROW((void)compare_samples(negative, ok, ab_config{}), std::invalid_argument);
    EXPECT_THROW((void)combine_geomean({}, ab_config{}), std::invalid_argument);
    ab_config bad;
    bad.confidence = 1.0;
    EXPECT_THROW((void)compare_samples(ok, ok, bad), std::invalid_argument);
}
