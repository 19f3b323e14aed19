// Unit under test: check/half — f16 and bf16 conversions (round to nearest even, NaN/Inf,
// subnormals).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "check/half.hpp"
#include "core/rng.hpp"

using namespace kloop::check;

namespace {
float f(std::uint32_t bits) { return std::bit_cast<float>(bits); }
constexpr float inf = std::numeric_limits<float>::infinity();
}  // namespace

TEST(HalfTest, F16KnownValues) {
    EXPECT_EQ(float_to_f16(1.0f), 0x3C00);
    EXPECT_EQ(float_to_f16(-2.0f), 0xC000);
    EXPECT_EQ(float_to_f16(0.0f), 0x0000);
    EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);  // max f16
    EXPECT_EQ(float_to_f16(0.5f), 0x3800);
    EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // min normal
    EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // min subnormal
    EXPECT_EQ(float_to_f16(0.1f), 0x2E66);
}

TEST(HalfTest, F16OverflowAndInfinity) {
    EXPECT_EQ(float_to_f16(65519.0f), 0x7BFF);  // below the midpoint to 2^16: stays max
    EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);  // midpoint, ties to even (odd mantissa 0x3FF) -> Inf
    EXPECT_EQ(float_to_f16(1e6f), 0x7C00);
    EXPECT_EQ(float_to_f16(-1e6f), 0xFC00);
    EXPECT_EQ(float_to_f16(inf), 0x7C00);
    EXPECT_EQ(float_to_f16(-inf), 0xFC00);
    EXPECT_TRUE(std::isinf(f16_to_float(0x7C00)));
}

TEST(HalfTest, F16TiesToEven) {
    // Between 1 and 1 + 2^-10: the midpoint 1 + 2^-11 rounds to even (1.0).
    EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    // Between 1 + 2^-10 (odd) and 1 + 2^-9 (even): the midpoint rounds up to the even one.
    EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
    // Just above a midpoint rounds up.
    EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
}

TEST(HalfTest, F16Subnormals) {
    EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -24)), 0x0003);
    EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest: tie to even 0
    EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 of the smallest
    EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 -> tie to even 2
    EXPECT_EQ(float_to_f16(std::ldexp(-1.0f, -30)), 0x8000);
    EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_float(0x03FF), std::ldexp(1023.0f, -24));
    EXPECT_EQ(f16_to_float(0x8200), -std::ldexp(1.0f, -15));
}

TEST(HalfTest, F16NaN) {
    EXPECT_EQ(float_to_f16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
    const auto h = float_to_f16(f(0xFF800001u));  // negative signalling NaN, low payload
    EXPECT_EQ(h & 0xFC00, 0xFC00);
    EXPECT_NE(h & 0x03FF, 0);  // still a NaN (quiet bit set)
    EXPECT_TRUE(std::isnan(f16_to_float(0x7E00)));
    EXPECT_TRUE(std::isnan(f16_to_float(0x7C01)));
}

TEST(HalfTest, F16RoundTripsEveryValue) {
    for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
        const float v = f16_to_float(static_cast<std::uint16_t>(h));
        if (std::isnan(v)) continue;
        ASSERT_EQ(float_to_f16(v), h) << std::hex << h;
    }
}

TEST(HalfTest, Bf16KnownValuesAndTies) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(float_to_bf16(-1.0f), 0xBF80);
    EXPECT_EQ(float_to_bf16(f(0x3F808000u)), 0x3F80);  // midpoint, even below
    EXPECT_EQ(float_to_bf16(f(0x3F818000u)), 0x3F82);  // midpoint, even above
    EXPECT_EQ(float_to_bf16(f(0x3F808001u)), 0x3F81);  // above the midpoint
    EXPECT_EQ(float_to_bf16(f(0x7F7FFFFFu)), 0x7F80);  // max float rounds to Inf
    EXPECT_EQ(float_to_bf16(f(0x7F7F0000u)), 0x7F7F);  // max bf16
    EXPECT_EQ(float_to_bf16(inf), 0x7F80);
    EXPECT_EQ(float_to_bf16(f(0x00010000u)), 0x0001);  // subnormal kept
    EXPECT_EQ(float_to_bf16(f(0x00008000u)), 0x0000);  // tie at the bottom -> 0
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f(0x7F800001u)))));  // low-payload NaN stays NaN
    EXPECT_EQ(bf16_to_float(0x4049), f(0x40490000u));
}

TEST(HalfTest, Bf16RoundTripsEveryValue) {
    for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
        const float v = bf16_to_float(static_cast<std::uint16_t>(h));
        if (std::isnan(v)) continue;
        ASSERT_EQ(float_to_bf16(v), h) << std::hex << h;
    }
}

TEST(HalfTest, RandomFloatsRoundToANearestNeighbour) {
    // For random floats over 60 binades: the double and float entry points agree, and the f16
    // result is at least as close to x as either adjacent f16 value.
    kloop::rng r(3);
    for (int i = 0; i < 100000; ++i) {
        const float x = static_cast<float>(std::ldexp(r.uniform01() * 2.0 - 1.0, static_cast<int>(r.next_below(60)) - 30));
        // double_to_* of an exactly representable float equals float_to_*.
        ASSERT_EQ(double_to_f16(static_cast<double>(x)), float_to_f16(x));
        ASSERT_EQ(double_to_bf16(static_cast<double>(x)), float_to_bf16(x));
        // Monotone and within half an ulp of the f16 grid: |x - f16(x)| <= |x - neighbour|.
        const auto h = float_to_f16(x);
        const float back = f16_to_float(h);
        if (std::isinf(back)) continue;
        const float up = f16_to_float(static_cast<std::uint16_t>(h + 1));
        const float down = f16_to_float(static_cast<std::uint16_t>(h - 1));
        if (!std::isnan(up)) {
            ASSERT_LE(std::fabs(x - back), std::fabs(x - up));
        }
        if ((h & 0x7FFF) != 0 && !std::isnan(down)) {
            ASSERT_LE(std::fabs(x - back), std::fabs(x - down));
        }
    }
}

TEST(HalfTest, DoubleRoundsOnceNotTwice) {
    // d = 1 + 2^-11 + 2^-40 lies just above the f16 midpoint between 0x3C00 and 0x3C01, so it
    // rounds up. Rounding to float first lands exactly on the midpoint (2^-40 is below half a
    // float ulp), which then ties to even: 0x3C00. The double entry point must not do that.
    const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    EXPECT_EQ(double_to_f16(d), 0x3C01);
    EXPECT_EQ(float_to_f16(static_cast<float>(d)), 0x3C00);
}
