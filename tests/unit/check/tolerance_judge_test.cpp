// Unit under test: check/tolerance_judge — verdicts, reason texts and index formatting.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "check/tolerance_judge.hpp"

using kloop::check::compare_metrics;
using kloop::check::format_index;
using kloop::check::judge;
using kloop::check::unflatten;
using kloop::spec::tolerance;

namespace {
tolerance elementwise(double atol, double rtol) {
    tolerance t;
    t.atol = atol;
    t.rtol = rtol;
    return t;
}
tolerance rms(double bound) {
    tolerance t;
    t.rel_rms = bound;
    return t;
}
}  // namespace

TEST(ToleranceJudgeTest, UnflattenAndFormat) {
    EXPECT_EQ(unflatten(0, {4, 5}), (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(unflatten(17, {4, 5}), (std::vector<std::int64_t>{3, 2}));
    EXPECT_EQ(unflatten(23, {2, 3, 4}), (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(unflatten(0, {}), (std::vector<std::int64_t>{}));
    EXPECT_THROW((void)unflatten(20, {4, 5}), std::out_of_range);
    EXPECT_THROW((void)unflatten(-1, {4, 5}), std::out_of_range);
    EXPECT_EQ(format_index({3, 17}), "[3, 17]");
    EXPECT_EQ(format_index({5}), "[5]");
    EXPECT_EQ(format_index({}), "[]");
}

TEST(ToleranceJudgeTest, PassWithinBounds) {
    compare_metrics m;
    m.n = 100;
    m.max_abs = 3e-6;
    m.max_rel = 2e-5;
    m.rel_rms = 1e-6;
    tolerance t = elementwise(1e-5, 1e-5);
    t.rel_rms = 1e-4;
    const auto j = judge(m, t, {10, 10});
    EXPECT_TRUE(j.pass) << j.reason;
    EXPECT_NE(j.reason.find("within atol=1e-05 rtol=1e-05 rel_rms=0.0001"), std::string::npos) << j.reason;
}

TEST(ToleranceJudgeTest, NaNAlwaysFailsWithPosition) {
    compare_metrics m;
    m.n = 40;
    m.nan_count = 12;
    m.mismatches = 12;
    m.first_bad = 5;
    m.first_nonfinite = 5;
    const auto j = judge(m, rms(1.0), {4, 10});
    EXPECT_FALSE(j.pass);
    EXPECT_EQ(j.reason, "12 NaN, 0 Inf in output (first at [0, 5])");
}

TEST(ToleranceJudgeTest, ElementwiseFailureReason) {
    compare_metrics m;
    m.n = 262144;
    m.mismatches = 1024;
    m.first_bad = 3 * 512 + 17;
    m.max_abs = 0.31;
    m.rel_rms = 1e-6;
    const auto j = judge(m, elementwise(1e-5, 1e-5), {512, 512});
    EXPECT_FALSE(j.pass);
    EXPECT_EQ(j.reason, "1024 of 262144 elements beyond atol=1e-05 rtol=1e-05 (first at [3, 17]; max_abs 0.31)");
}

TEST(ToleranceJudgeTest, RelRmsFailureReason) {
    compare_metrics m;
    m.n = 10;
    m.rel_rms = 2.1e-3;
    const auto j = judge(m, rms(1e-4), {10});
    EXPECT_FALSE(j.pass);
    EXPECT_EQ(j.reason, "rel_rms 2.10e-03 > 1.00e-04");
    m.rel_rms = std::numeric_limits<double>::infinity();
    EXPECT_FALSE(judge(m, rms(1e-4), {10}).pass);
    m.rel_rms = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(judge(m, rms(1e-4), {10}).pass);
}

TEST(ToleranceJudgeTest, AllGivenBoundsMustHold) {
    compare_metrics m;
    m.n = 10;
    m.mismatches = 0;
    m.rel_rms = 0.5;
    tolerance t = elementwise(1.0, 0.0);
    t.rel_rms = 0.01;
    const auto j = judge(m, t, {10});
    EXPECT_FALSE(j.pass);  // elementwise holds, rel_rms does not
    EXPECT_EQ(j.reason, "rel_rms 5.00e-01 > 1.00e-02");
    m.mismatches = 1;
    m.first_bad = 2;
    m.max_abs = 2.0;
    const auto j2 = judge(m, t, {10});
    EXPECT_EQ(j2.reason, "1 of 10 elements beyond atol=1 rtol=0 (first at [2]; max_abs 2); rel_rms 5.00e-01 > 1.00e-02");
}

TEST(ToleranceJudgeTest, NoBoundFails) {
    compare_metrics m;
    m.n = 1;
    const auto j = judge(m, tolerance{}, {1});
    EXPECT_FALSE(j.pass);
    EXPECT_EQ(j.reason, "tolerance gives no bound");
}

TEST(ToleranceJudgeTest, ShapeNotMatchingCountFallsBackToFlatIndex) {
    compare_metrics m;
    m.n = 50;
    m.inf_count = 1;
    m.mismatches = 1;
    m.first_bad = 42;
    m.first_nonfinite = 42;
    EXPECT_EQ(judge(m, rms(1.0), {}).reason, "0 NaN, 1 Inf in output (first at [42])");
}

TEST(ToleranceJudgeTest, NonFiniteReferenceFails) {
    compare_metrics m;
    m.n = 8;
    m.ref_nonfinite = 3;
    m.mismatches = 1;
    m.first_bad = 7;
    const auto j = judge(m, elementwise(1.0, 1.0), {8});
    EXPECT_FALSE(j.pass);
    EXPECT_EQ(j.reason, "reference has 3 non-finite values (first mismatch at [7])");
}
