// Unit under test: core/text — trimming, line and field splitting, ASCII lower case, joining.
#include <gtest/gtest.h>

#include "core/text.hpp"

TEST(TextTest, TrimAndTrimmed) {
    EXPECT_EQ(kloop::trim(" \t a b \r\n"), "a b");
    EXPECT_EQ(kloop::trim("   "), "");
    EXPECT_EQ(kloop::trimmed("\v\fx\n"), std::string("x"));
}

TEST(TextTest, SplitLinesKeepsTheLastLineAndDropsCarriageReturns) {
    const auto l = kloop::split_lines("a\r\nb\nc");
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0], "a");
    EXPECT_EQ(l[2], "c");
    EXPECT_EQ(kloop::split_lines("").size(), 1u);
}

TEST(TextTest, SplitFieldsTrimsEachAndKeepsEmptyOnes) {
    const auto f = kloop::split_fields("0, NVIDIA H200 ,, [N/A]", ',');
    ASSERT_EQ(f.size(), 4u);
    EXPECT_EQ(f[1], "NVIDIA H200");
    EXPECT_EQ(f[2], "");
    EXPECT_EQ(f[3], "[N/A]");
    EXPECT_EQ(kloop::split_fields("", ':').size(), 1u);
}

TEST(TextTest, LowerIsAsciiOnlyAndJoinPutsTheSeparatorBetween) {
    EXPECT_EQ(kloop::lower("DRAM Throughput µs"), "dram throughput µs");
    EXPECT_EQ(kloop::join({"-O3", "-std=c++20"}, " "), "-O3 -std=c++20");
    EXPECT_EQ(kloop::join({}, ", "), "");
    EXPECT_EQ(kloop::join({"a"}, ", "), "a");
}
