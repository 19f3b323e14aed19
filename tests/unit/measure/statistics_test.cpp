// Unit under test: measure/statistics — summary on known samples, percentile interpolation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "measure/statistics.hpp"

using namespace kloop::measure;

TEST(StatisticsTest, SummaryOfOneToTen) {
    const std::vector<double> x{7, 3, 10, 1, 5, 9, 2, 8, 4, 6};  // 1..10, unsorted
    const auto s = summarize(x);
    EXPECT_EQ(s.n, 10u);
    EXPECT_DOUBLE_EQ(s.median, 5.5);
    EXPECT_DOUBLE_EQ(s.mean, 5.5);
    EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(82.5 / 9.0));  // sum of squared deviations 82.5, n-1 = 9
    EXPECT_DOUBLE_EQ(s.min, 1.0);
    EXPECT_DOUBLE_EQ(s.max, 10.0);
    EXPECT_DOUBLE_EQ(s.p10, 1.9);   // h = 9 * 0.1 = 0.9: 1 + 0.9 * (2 - 1)
    EXPECT_DOUBLE_EQ(s.p90, 9.1);
    EXPECT_DOUBLE_EQ(s.q1, 3.25);   // h = 2.25
    EXPECT_DOUBLE_EQ(s.q3, 7.75);
    EXPECT_DOUBLE_EQ(s.iqr, 4.5);
    EXPECT_DOUBLE_EQ(s.cv, std::sqrt(82.5 / 9.0) / 5.5);
}

TEST(StatisticsTest, OddCountMedianAndPercentileEnds) {
    const std::vector<double> x{4.0, 1.0, 2.0};
    EXPECT_DOUBLE_EQ(median_of(x), 2.0);
    EXPECT_DOUBLE_EQ(percentile_of(x, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(percentile_of(x, 1.0), 4.0);
    EXPECT_DOUBLE_EQ(percentile_of(x, 0.75), 3.0);  // h = 1.5 between 2 and 4
}

TEST(StatisticsTest, SingleSample) {
    const std::vector<double> x{0.25};
    const auto s = summarize(x);
    EXPECT_EQ(s.n, 1u);
    EXPECT_EQ(s.median, 0.25);
    EXPECT_EQ(s.stdev, 0.0);
    EXPECT_EQ(s.cv, 0.0);
    EXPECT_EQ(s.p10, 0.25);
    EXPECT_EQ(s.iqr, 0.0);
}

TEST(StatisticsTest, StdevIsStableForLargeOffsets) {
    // Tiny spread on a huge mean: a one-pass sum-of-squares formula would cancel to garbage.
    std::vector<double> x;
    for (int i = 0; i < 1000; ++i) x.push_back(1e9 + (i % 2 ? 1e-3 : -1e-3));
    EXPECT_NEAR(summarize(x).stdev, 1e-3, 1e-6);
}

TEST(StatisticsTest, RejectsBadInput) {
    const std::vector<double> empty;
    EXPECT_THROW((void)summarize(empty), std::invalid_argument);
    EXPECT_THROW((void)median_of(empty), std::invalid_argument);
    const std::vector<double> with_nan{1.0, std::numeric_limits<double>::quiet_NaN()};
    EXPECT_THROW((void)summarize(with_nan), std::invalid_argument);
    const std::vector<double> ok{1.0, 2.0};
    EXPECT_THROW((void)percentile_of(ok, 1.5), std::invalid_argument);
    EXPECT_THROW((void)percentile_of(ok, -0.1), std::invalid_argument);
}
