// Unit under test: check/comparison — metrics on synthetic arrays, the mismatch rule, the JSON
// round trip with non-finite values, and the chunked parallel reduction (same bits on any thread
// count, first_bad the global minimum, chunk-boundary indices).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/comparison.hpp"
#include "check/half.hpp"
#include "core/thread_pool.hpp"

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

// ---- chunked, parallel comparison ----

namespace {

constexpr std::int64_t chunk = kloop::k_chunk_elems;

// A reference with a spread of magnitudes and an output close to it, deterministic.
void make_pair(std::int64_t n, std::vector<float>& ref, std::vector<float>& out) {
    ref.resize(static_cast<std::size_t>(n));
    out.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        const float r = static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * (1.0 + static_cast<double>(i % 97)));
        ref[static_cast<std::size_t>(i)] = r;
        out[static_cast<std::size_t>(i)] = r + static_cast<float>(1e-6 * static_cast<double>((i * 7919) % 13 - 6));
    }
}

}  // namespace

TEST(ComparisonTest, SameMetricsOnOneThreadAndOnMany) {
    kloop::thread_pool one(1);
    kloop::thread_pool many(4);
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, chunk - 1, chunk, chunk + 1, 5 * chunk + 17}) {
        std::vector<float> ref;
        std::vector<float> out;
        make_pair(n, ref, out);
        if (n > 3) {
            out[static_cast<std::size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
            ref[static_cast<std::size_t>(n - 1)] = std::numeric_limits<float>::infinity();
        }
        for (const auto& tol : {elementwise(1e-6, 1e-6), elementwise(0.0, 0.0), tolerance{}}) {
            const auto a = compare_outputs(dtype::f32, out.data(), ref.data(), n, tol, one);
            const auto b = compare_outputs(dtype::f32, out.data(), ref.data(), n, tol, many);
            EXPECT_EQ(a, b) << "n " << n;  // every field, bit for bit
            EXPECT_EQ(std::memcmp(&a.rel_rms, &b.rel_rms, sizeof(double)), 0);
            EXPECT_EQ(a.n, n);
        }
    }
}

TEST(ComparisonTest, FirstBadIsTheGlobalMinimumOverChunks) {
    // Mismatches in chunks 4, 1 and 3 (chunk 1's latest in its chunk): the reported first is
    // chunk 1's, however the chunks are scheduled.
    const std::int64_t n = 6 * chunk;
    std::vector<double> ref(static_cast<std::size_t>(n), 1.0);
    std::vector<double> out = ref;
    const std::int64_t expected = 2 * chunk - 1;
    for (std::int64_t at : {4 * chunk, expected, 3 * chunk + 5, 4 * chunk + 9}) out[static_cast<std::size_t>(at)] = 2.0;
    out[static_cast<std::size_t>(5 * chunk + 1)] = std::numeric_limits<double>::infinity();
    out[static_cast<std::size_t>(3 * chunk + 2)] = std::numeric_limits<double>::quiet_NaN();
    kloop::thread_pool pool(4);
    for (int repeat = 0; repeat < 20; ++repeat) {
        const auto m = compare_outputs(dtype::f64, out.data(), ref.data(), n, elementwise(0.1, 0.0), pool);
        ASSERT_EQ(m.first_bad, expected);
        ASSERT_EQ(m.mismatches, 6);
        ASSERT_EQ(m.first_nonfinite, 3 * chunk + 2);
        ASSERT_EQ(m.nan_count, 1);
        ASSERT_EQ(m.inf_count, 1);
        ASSERT_EQ(m.max_abs, 1.0);
    }
}

TEST(ComparisonTest, ChunkBoundaryIndicesAreExact) {
    kloop::thread_pool pool(3);
    for (std::int64_t n : {std::int64_t{1}, chunk - 1, chunk, chunk + 1}) {
        for (std::int64_t at : {std::int64_t{0}, n - 1, std::min(n - 1, chunk - 1), std::min(n - 1, chunk)}) {
            std::vector<std::int32_t> ref(static_cast<std::size_t>(n), 5);
            std::vector<std::int32_t> out = ref;
            out[static_cast<std::size_t>(at)] = 6;
            const auto m = compare_outputs(dtype::i32, out.data(), ref.data(), n, elementwise(0.0, 0.0), pool);
            ASSERT_EQ(m.first_bad, at) << "n " << n;
            ASSERT_EQ(m.mismatches, 1);
            ASSERT_EQ(m.max_abs, 1.0);
        }
    }
}

TEST(ComparisonTest, RelRmsOverManyChunksMatchesALongDoubleSum) {
    std::vector<float> ref;
    std::vector<float> out;
    const std::int64_t n = 7 * chunk + 1;
    make_pair(n, ref, out);
    long double d2 = 0;
    long double r2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const long double r = ref[static_cast<std::size_t>(i)];
        const long double d = static_cast<long double>(out[static_cast<std::size_t>(i)]) - r;
        d2 += d * d;
        r2 += r * r;
    }
    const auto m = compare_outputs(dtype::f32, out.data(), ref.data(), n, tolerance{});
    EXPECT_NEAR(m.rel_rms, static_cast<double>(std::sqrt(d2 / r2)), 1e-12 * m.rel_rms);
}
