// Unit under test: loop/fingerprint — tag normalisation and the strategy fingerprint.
#include <gtest/gtest.h>

#include "loop/fingerprint.hpp"

using namespace kloop::loop;

TEST(FingerprintTest, NormalisesTags) {
    EXPECT_EQ(normalise_tag("Loop_Fusion"), "loop-fusion");
    EXPECT_EQ(normalise_tag("  loop   fusion "), "loop-fusion");
    EXPECT_EQ(normalise_tag("`vectorization`"), "vectorization");
    EXPECT_EQ(normalise_tag("--double--buffer--"), "double-buffer");
}

TEST(FingerprintTest, OrderCaseAndDuplicatesDoNotMatter) {
    const auto a = fingerprint_of("cuda", {"Tiling", "double buffer", "tiling"});
    const auto b = fingerprint_of("cuda", {"double_buffer", "tiling"});
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.size(), 16u);
}

TEST(FingerprintTest, BackendAndTagsChangeIt) {
    EXPECT_NE(fingerprint_of("cuda", {"tiling"}), fingerprint_of("cpu", {"tiling"}));
    EXPECT_NE(fingerprint_of("cuda", {"tiling"}), fingerprint_of("cuda", {"tiling", "swizzle"}));
    // field separation: {"ab","c"} vs {"a","bc"}
    EXPECT_NE(fingerprint_of("x", {"ab", "c"}), fingerprint_of("x", {"a", "bc"}));
}
