// Unit under test: core/dtype — names, sizes, ABI mapping.
#include <gtest/gtest.h>

#include "core/dtype.hpp"
#include "kloop/kernel.h"

using kloop::dtype;

TEST(DtypeTest, RoundTripsEveryName) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64}) {
        auto back = kloop::dtype_from_string(kloop::to_string(t));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, t);
    }
    EXPECT_FALSE(kloop::dtype_from_string("float32").has_value());
    EXPECT_FALSE(kloop::dtype_from_string("").has_value());
}

TEST(DtypeTest, SizesAndAbiValues) {
    EXPECT_EQ(kloop::size_bytes(dtype::bf16), 2u);
    EXPECT_EQ(kloop::size_bytes(dtype::i64), 8u);
    EXPECT_EQ(kloop::to_abi(dtype::bf16), KL_BF16);
    EXPECT_EQ(kloop::to_abi(dtype::i32), KL_I32);
    EXPECT_TRUE(kloop::is_floating(dtype::f16));
    EXPECT_FALSE(kloop::is_floating(dtype::i32));
}
