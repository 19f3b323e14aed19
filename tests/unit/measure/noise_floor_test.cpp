// Unit under test: measure/noise_floor — the statistics of `kloop noise` (A timed against A):
// per-shape noise floor, deviation, interval width and verdict counts; the false-verdict rate
// over every shape verdict, held to 5 %; shapes without a verdict counted as failed.
#include <gtest/gtest.h>

#include <cmath>

#include "measure/noise_floor.hpp"

namespace km = kloop::measure;

namespace {

km::ab_result verdict(double speedup, double half_width, km::ab_verdict v) {
    return km::ab_result{speedup, speedup - half_width, speedup + half_width, v};
}

km::noise_run run(std::optional<km::ab_result> a, std::optional<km::ab_result> b) {
    km::noise_run r;
    r.overall = verdict(1.0, 0.01, km::ab_verdict::same);
    r.shapes = {{"fwd", "small", a}, {"fwd", "large", b}};
    return r;
}

}  // namespace

TEST(NoiseFloorTest, PerShapeFloorDeviationWidthAndCounts) {
    const auto s = km::summarize_noise({
        run(verdict(1.02, 0.01, km::ab_verdict::same), verdict(1.0, 0.002, km::ab_verdict::same)),
        run(verdict(1 / 1.04, 0.03, km::ab_verdict::slower), verdict(1.0, 0.004, km::ab_verdict::same)),
        run(verdict(1.01, 0.02, km::ab_verdict::same), std::nullopt),
    });
    ASSERT_EQ(s.shapes.size(), 2u);
    const auto& small = s.shapes[0];
    EXPECT_EQ(small.mode, "fwd");
    EXPECT_EQ(small.shape, "small");
    EXPECT_EQ(small.verdicts.total(), 3);
    EXPECT_EQ(small.verdicts.slower, 1);
    EXPECT_EQ(small.failed, 0);
    // |log| of 1.02, 1/1.04, 1.01: median is log(1.02); the largest log(1.04).
    EXPECT_NEAR(small.noise_floor(), 0.02, 1e-12);
    EXPECT_NEAR(small.max_deviation(), 0.04, 1e-12);
    EXPECT_NEAR(small.median_half_width(), 0.02, 1e-12);
    EXPECT_NEAR(small.false_verdict_rate(), 1.0 / 3, 1e-12);
    const auto& large = s.shapes[1];
    EXPECT_EQ(large.failed, 1);
    EXPECT_EQ(large.verdicts.total(), 2);
    EXPECT_EQ(large.noise_floor(), 0.0);
    EXPECT_NEAR(large.median_half_width(), 0.003, 1e-12);
    EXPECT_EQ(s.shape_verdicts, 5);
    EXPECT_EQ(s.false_verdicts, 1);
    EXPECT_NEAR(s.false_verdict_rate(), 0.2, 1e-12);
    EXPECT_FALSE(s.within_allowed());  // 20 % > 5 %
    EXPECT_EQ(s.geomean_verdicts.same, 3);
}

TEST(NoiseFloorTest, WithinTheAllowedRateOnlyWithVerdicts) {
    std::vector<km::noise_run> runs;
    for (int i = 0; i < 20; ++i)
        runs.push_back(run(verdict(1.0, 0.01, i == 0 ? km::ab_verdict::faster : km::ab_verdict::same),
                           verdict(1.0, 0.01, km::ab_verdict::ambiguous)));
    const auto s = km::summarize_noise(runs);
    EXPECT_EQ(s.false_verdicts, 1);
    EXPECT_NEAR(s.false_verdict_rate(), 1.0 / 40, 1e-12);
    EXPECT_TRUE(s.within_allowed());
    // No verdict at all is never "within": there is nothing to vouch for.
    const auto none = km::summarize_noise({run(std::nullopt, std::nullopt)});
    EXPECT_EQ(none.shape_verdicts, 0);
    EXPECT_FALSE(none.within_allowed());
    EXPECT_EQ(none.shapes[0].failed, 1);
    EXPECT_EQ(none.shapes[0].noise_floor(), 0.0);
    EXPECT_EQ(none.shapes[0].max_deviation(), 0.0);
}
