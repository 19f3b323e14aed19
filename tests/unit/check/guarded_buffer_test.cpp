// Unit under test: check/guarded_buffer — alignment, poison patterns, red-zone detection with
// offsets, move semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "check/element_access.hpp"
#include "check/guarded_buffer.hpp"
#include "check/half.hpp"

using kloop::dtype;
using kloop::check::guarded_buffer;

TEST(GuardedBufferTest, SizesAlignmentAndZeroFill) {
    guarded_buffer b(dtype::f16, 37, 100);
    EXPECT_EQ(b.size(), 37);
    EXPECT_EQ(b.bytes(), 74u);
    EXPECT_EQ(b.get_type(), dtype::f16);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    const auto* p = static_cast<const unsigned char*>(b.data());
    for (std::size_t i = 0; i < b.bytes(); ++i) ASSERT_EQ(p[i], 0);
    EXPECT_TRUE(b.redzones_intact());
    EXPECT_FALSE(b.first_redzone_violation().has_value());
}

TEST(GuardedBufferTest, PoisonGivesNaNForEveryFloatDtype) {
    for (dtype t : {dtype::f16, dtype::bf16, dtype::f32, dtype::f64}) {
        guarded_buffer b(t, 13);
        b.poison();
        for (std::int64_t i = 0; i < b.size(); ++i)
            ASSERT_TRUE(std::isnan(kloop::check::load_element(t, b.data(), i))) << kloop::to_string(t);
        EXPECT_TRUE(b.redzones_intact());
    }
    // One byte pattern for every dtype, the same a device mirror gets from a memset.
    for (dtype t : {dtype::f16, dtype::bf16, dtype::f32, dtype::f64}) {
        guarded_buffer b(t, 3);
        b.poison();
        const auto* p = static_cast<const unsigned char*>(b.data());
        for (std::size_t i = 0; i < b.bytes(); ++i) ASSERT_EQ(p[i], 0xFF) << kloop::to_string(t);
    }
}

TEST(GuardedBufferTest, PoisonGivesAllOnesForIntegers) {
    for (dtype t : {dtype::i32, dtype::i64}) {
        guarded_buffer b(t, 9);
        b.poison();
        const auto* p = static_cast<const unsigned char*>(b.data());
        for (std::size_t i = 0; i < b.bytes(); ++i) ASSERT_EQ(p[i], 0xFF);
        EXPECT_EQ(kloop::check::load_element(t, b.data(), 3), -1.0);
        EXPECT_TRUE(b.redzones_intact());
    }
}

TEST(GuardedBufferTest, OneBytePastTheEndIsDetected) {
    guarded_buffer b(dtype::f32, 10);
    static_cast<unsigned char*>(b.data())[40] ^= 0x01;
    EXPECT_FALSE(b.redzones_intact());
    ASSERT_TRUE(b.first_redzone_violation().has_value());
    EXPECT_EQ(*b.first_redzone_violation(), 40);
    EXPECT_EQ(b.count_redzone_violations(), 1u);
}

TEST(GuardedBufferTest, OneByteBeforeTheStartIsDetected) {
    guarded_buffer b(dtype::i64, 4);
    static_cast<unsigned char*>(b.data())[-1] = 0;
    ASSERT_TRUE(b.first_redzone_violation().has_value());
    EXPECT_EQ(*b.first_redzone_violation(), -1);
}

TEST(GuardedBufferTest, ViolationAtTheFarEndOfEachZone) {
    guarded_buffer b(dtype::f32, 3, 64);
    auto* p = static_cast<unsigned char*>(b.data());
    p[12 + 63] = 0xFF;  // last byte of the back zone
    EXPECT_EQ(b.first_redzone_violation().value_or(0), 75);
    p[-64] = 0x00;  // first byte of the front zone: lowest address is reported
    EXPECT_EQ(b.first_redzone_violation().value_or(0), -64);
    EXPECT_EQ(b.count_redzone_violations(), 2u);
    b.reset_redzones();
    EXPECT_TRUE(b.redzones_intact());
}

TEST(GuardedBufferTest, WritesInsideTheDataAreNotViolations) {
    guarded_buffer b(dtype::f64, 16);
    std::memset(b.data(), 0xFF, b.bytes());
    b.poison();
    std::memset(b.data(), 0x00, b.bytes());
    EXPECT_TRUE(b.redzones_intact());
}

TEST(GuardedBufferTest, EmptyBufferStillGuarded) {
    guarded_buffer b(dtype::f32, 0);
    EXPECT_EQ(b.bytes(), 0u);
    EXPECT_TRUE(b.redzones_intact());
    static_cast<unsigned char*>(b.data())[0] ^= 0x10;  // the first back-zone byte
    EXPECT_EQ(b.first_redzone_violation().value_or(-999), 0);
}

TEST(GuardedBufferTest, MoveTransfersOwnership) {
    guarded_buffer a(dtype::i32, 8);
    void* p = a.data();
    guarded_buffer b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.size(), 8);
    std::vector<guarded_buffer> v;
    v.push_back(std::move(b));
    v.emplace_back(dtype::f16, 4);
    EXPECT_EQ(v[0].data(), p);
    EXPECT_TRUE(v[0].redzones_intact());
    EXPECT_THROW(guarded_buffer(dtype::f32, -1), std::invalid_argument);
}

TEST(GuardedBufferTest, ConstructedPoisonedEqualsPoisonAfterZeroFill) {
    for (dtype t : {dtype::f16, dtype::bf16, dtype::f32, dtype::f64, dtype::i32, dtype::i64}) {
        guarded_buffer a(t, 1000, 256, guarded_buffer::initial_contents::poison);
        guarded_buffer b(t, 1000);
        b.poison();
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << kloop::to_string(t);
        EXPECT_TRUE(a.redzones_intact());
    }
}

TEST(GuardedBufferTest, LargeBuffersArePoisonedAndZeroedEverywhere) {
    // Several 1 MiB fill chunks plus a ragged end: every element is written, the red zones are not.
    const std::int64_t n = (3 << 20) / 2 + 7;  // bf16: 3 MiB + 14 bytes
    guarded_buffer b(dtype::bf16, n);
    const auto* p = static_cast<const unsigned char*>(b.data());
    for (std::size_t i = 0; i < b.bytes(); ++i) ASSERT_EQ(p[i], 0) << i;
    b.poison();
    for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        ASSERT_EQ(v, 0xFFFF) << i;  // 0xFF in every byte: a NaN in bf16
    }
    EXPECT_TRUE(b.redzones_intact());
    guarded_buffer w(dtype::f64, (1 << 20) / 8 * 2 + 3, 64, guarded_buffer::initial_contents::poison);
    const auto* q = static_cast<const unsigned char*>(w.data());
    for (std::int64_t i = 0; i < w.size(); ++i) {
        std::uint64_t v;
        std::memcpy(&v, q + 8 * i, 8);
        ASSERT_EQ(v, ~std::uint64_t{0}) << i;  // 0xFF in every byte: a NaN in f64
    }
    EXPECT_TRUE(w.redzones_intact());
}
