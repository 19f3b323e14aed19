// Unit under test: check/comparison — metrics on synthetic arrays, the mismatch rule, and the
// JSON round trip with non-finite values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/comparison.hpp"
#include "check/half.hpp"

using kloop::dtype;
using kloop::check::compare_metrics;
using kloop::check::compare_outputs;
using kloop::spec::tolerance;

namespace {
tolerance elementwise(double atol, double rtol) {
    tolerance t;
    t.atol = atol;
    t.rtol = rtol;
    return t;
}
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(ComparisonTest, ExactMatchHasNoMismatches) {
    std::vector<float> ref{1.0f, -2.0f, 3.5f, 0.0f};
    const auto m = compare_outputs(dtype::f32, ref.data(), ref.data(), 4, elementwise(0.0, 0.0));
    EXPECT_EQ(m.n, 4);
    EXPECT_EQ(m.mismatches, 0);
    EXPECT_EQ(m.first_bad, -1);
    EXPECT_EQ(m.max_abs, 0.0);
    EXPECT_EQ(m.max_rel, 0.0);
    EXPECT_EQ(m.rel_rms, 0.0);
    EXPECT_EQ(m.nan_count, 0);
    EXPECT_EQ(m.first_nonfinite, -1);
}

TEST(ComparisonTest, OneElementOffIsFoundAtItsIndex) {
    std::vector<double> ref{1.0, 2.0, 3.0, 4.0, 5.0};
    std::vector<double> out = ref;
    out[3] = 4.5;
    const auto m = compare_outputs(dtype::f64, out.data(), ref.data(), 5, elementwise(0.1, 0.0));
    EXPECT_EQ(m.mismatches, 1);
    EXPECT_EQ(m.first_bad, 3);
    EXPECT_DOUBLE_EQ(m.max_abs, 0.5);
    EXPECT_DOUBLE_EQ(m.max_rel, 0.125);
    // rel_rms = sqrt(0.25 / (1 + 4 + 9 + 16 + 25)) by hand
    EXPECT_DOUBLE_EQ(m.rel_rms, std::sqrt(0.25 / 55.0));
}

TEST(ComparisonTest, AtolPlusRtolBoundIsInclusive) {
    std::vector<double> ref{10.0, 10.0, -10.0};
    std::vector<double> out{10.5, 10.75, -10.75};  // bound = 0.25 + 0.05 * 10 = 0.75
    const auto m = compare_outputs(dtype::f64, out.data(), ref.data(), 3, elementwise(0.25, 0.05));
    EXPECT_EQ(m.mismatches, 0);
    out[1] = 10.76;
    const auto m2 = compare_outputs(dtype::f64, out.data(), ref.data(), 3, elementwise(0.25, 0.05));
    EXPECT_EQ(m2.mismatches, 1);
    EXPECT_EQ(m2.first_bad, 1);
    tolerance only_rtol;
    only_rtol.rtol = 0.01;  // missing atol counts as 0
    const auto m3 = compare_outputs(dtype::f64, out.data(), ref.data(), 3, only_rtol);
    EXPECT_EQ(m3.mismatches, 3);
}

TEST(ComparisonTest, NaNAndInfAreCountedAndMismatch) {
    std::vector<double> ref{1.0, 2.0, 3.0, 4.0};
    std::vector<double> out{1.0, qnan, -inf, qnan};
    tolerance rms_only;
    rms_only.rel_rms = 1e-3;  // no elementwise bound: only non-finite values mismatch
    const auto m = compare_outputs(dtype::f64, out.data(), ref.data(), 4, rms_only);
    EXPECT_EQ(m.nan_count, 2);
    EXPECT_EQ(m.inf_count, 1);
    EXPECT_EQ(m.mismatches, 3);
    EXPECT_EQ(m.first_bad, 1);
    EXPECT_EQ(m.first_nonfinite, 1);
    EXPECT_EQ(m.rel_rms, 0.0);  // over the one finite pair, which matches
}

TEST(ComparisonTest, PoisonedF16OutputIsAllNaN) {
    std::vector<std::uint16_t> out(6, kloop::check::f16_quiet_nan);
    std::vector<std::uint16_t> ref(6, 0x3C00);
    const auto m = compare_outputs(dtype::f16, out.data(), ref.data(), 6, elementwise(1e-2, 1e-2));
    EXPECT_EQ(m.nan_count, 6);
    EXPECT_EQ(m.mismatches, 6);
    EXPECT_EQ(m.first_bad, 0);
}

TEST(ComparisonTest, NonFiniteReference) {
    std::vector<double> ref{inf, qnan, 1.0};
    std::vector<double> same{inf, qnan, 1.0};
    const auto m = compare_outputs(dtype::f64, same.data(), ref.data(), 3, elementwise(0.0, 0.0));
    EXPECT_EQ(m.ref_nonfinite, 2);
    EXPECT_EQ(m.mismatches, 0);  // reproduced exactly (the judge still fails the NaN/Inf)
    std::vector<double> other{1.0, 1.0, 1.0};
    const auto m2 = compare_outputs(dtype::f64, other.data(), ref.data(), 3, elementwise(0.0, 0.0));
    EXPECT_EQ(m2.mismatches, 2);
    EXPECT_EQ(m2.nan_count, 0);
}

TEST(ComparisonTest, RelRmsAgainstHandComputation) {
    std::vector<float> ref{3.0f, -4.0f, 0.0f, 12.0f};
    std::vector<float> out{3.0f, -3.0f, 0.5f, 12.0f};
    tolerance rms;
    rms.rel_rms = 0.1;
    const auto m = compare_outputs(dtype::f32, out.data(), ref.data(), 4, rms);
    // diffs 0, 1, 0.5, 0: sum sq 1.25; ref sum sq 9 + 16 + 0 + 144 = 169
    EXPECT_DOUBLE_EQ(m.rel_rms, std::sqrt(1.25 / 169.0));
    EXPECT_DOUBLE_EQ(m.max_abs, 1.0);
    EXPECT_DOUBLE_EQ(m.max_rel, 0.25);  // the 0.5 against ref 0 is excluded from max_rel
    EXPECT_EQ(m.mismatches, 0);
}

TEST(ComparisonTest, ZeroReferenceRelRms) {
    std::vector<double> zero{0.0, 0.0};
    std::vector<double> off{0.0, 1e-9};
    tolerance rms;
    rms.rel_rms = 1.0;
    EXPECT_EQ(compare_outputs(dtype::f64, zero.data(), zero.data(), 2, rms).rel_rms, 0.0);
    EXPECT_TRUE(std::isinf(compare_outputs(dtype::f64, off.data(), zero.data(), 2, rms).rel_rms));
}

TEST(ComparisonTest, LargeIntegersDifferExactly) {
    std::vector<std::int64_t> ref{(std::int64_t{1} << 60), 5};
    std::vector<std::int64_t> out{(std::int64_t{1} << 60) + 1, 5};  // equal once converted to double
    const auto m = compare_outputs(dtype::i64, out.data(), ref.data(), 2, elementwise(0.0, 0.0));
    EXPECT_EQ(m.mismatches, 1);
    EXPECT_EQ(m.max_abs, 1.0);
}

TEST(ComparisonTest, JsonRoundTripKeepsNonFiniteValues) {
    compare_metrics m;
    m.n = 10;
    m.max_abs = inf;
    m.max_rel = 0.25;
    m.rel_rms = qnan;
    m.mismatches = 2;
    m.first_bad = 4;
    m.nan_count = 1;
    m.inf_count = 1;
    m.first_nonfinite = 4;
    const nlohmann::json j = m;
    EXPECT_EQ(j.at("max_abs"), "inf");
    EXPECT_EQ(j.at("rel_rms"), "nan");
    EXPECT_EQ(j.at("max_rel"), 0.25);
    const auto back = nlohmann::json::parse(j.dump()).get<compare_metrics>();
    EXPECT_EQ(back.n, 10);
    EXPECT_TRUE(std::isinf(back.max_abs));
    EXPECT_TRUE(std::isnan(back.rel_rms));
    EXPECT_EQ(back.max_rel, 0.25);
    EXPECT_EQ(back.first_bad, 4);
    EXPECT_EQ(back.first_nonfinite, 4);
    nlohmann::json old = j;
    old.erase("first_nonfinite");
    old.erase("ref_nonfinite");
    EXPECT_EQ(old.get<compare_metrics>().first_nonfinite, -1);
}
