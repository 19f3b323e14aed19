// Unit under test: loop/loop_status — stall detection, the cap, the target, the next step.
#include <gtest/gtest.h>

#include "loop/loop_status.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;

namespace {
std::vector<iteration_record> history(std::vector<iteration_status> statuses) {
    std::vector<iteration_record> rs{record(0, iteration_status::baseline, 4, 8)};
    double a = 4;
    for (std::size_t i = 0; i < statuses.size(); ++i) {
        if (statuses[i] == iteration_status::positive) a *= 0.8;
        rs.push_back(record(static_cast<int>(i + 1), statuses[i], statuses[i] == iteration_status::positive ? a : a * 1.1, 8));
    }
    return rs;
}
}  // namespace

TEST(LoopStatusTest, FreshLoopSaysIterate) {
    const auto st = compute_status(history({}), 5, std::nullopt);
    EXPECT_EQ(st.iterations, 0);
    EXPECT_EQ(st.next, next_step::iterate);
    EXPECT_EQ(st.best, 0);
}

TEST(LoopStatusTest, ThreeIterationsWithoutImprovementIsAStall) {
    using S = iteration_status;
    EXPECT_EQ(compute_status(history({S::positive, S::negative, S::rejected}), 10, std::nullopt).next, next_step::iterate);
    const auto st = compute_status(history({S::positive, S::negative, S::rejected, S::negative}), 10, std::nullopt);
    EXPECT_EQ(st.since_improvement, 3);
    EXPECT_EQ(st.next, next_step::stall);
    EXPECT_NE(st.next_text.find("Re-profile"), std::string::npos);
    EXPECT_NE(st.next_text.find("OPT_LOG.md"), std::string::npos);
}

TEST(LoopStatusTest, APositiveEndsTheStall) {
    using S = iteration_status;
    const auto st = compute_status(history({S::negative, S::negative, S::negative, S::positive}), 10, std::nullopt);
    EXPECT_EQ(st.since_improvement, 0);
    EXPECT_EQ(st.next, next_step::iterate);
    EXPECT_EQ(st.best, 4);
}

TEST(LoopStatusTest, StallWithoutAnyPositiveCountsFromTheBaseline) {
    using S = iteration_status;
    EXPECT_EQ(iterations_since_improvement(history({S::negative, S::rejected, S::negative})), 3);
}

TEST(LoopStatusTest, CapReachedSaysStopEvenDuringAStall) {
    using S = iteration_status;
    const auto st = compute_status(history({S::negative, S::negative, S::negative}), 3, std::nullopt);
    EXPECT_EQ(st.next, next_step::stop_cap);
    EXPECT_NE(st.next_text.find("cap (3)"), std::string::npos);
}

TEST(LoopStatusTest, TargetReachedSuggestsTheReport) {
    using S = iteration_status;
    // baseline geomean sqrt(4*8); v1 halves the first shape: speedup sqrt(2) ~ 1.41
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::positive, 2, 8)};
    EXPECT_EQ(compute_status(rs, 5, 1.5).next, next_step::iterate);
    const auto st = compute_status(rs, 5, 1.4);
    EXPECT_EQ(st.next, next_step::stop_target);
    ASSERT_TRUE(st.estimated_speedup);
    EXPECT_NEAR(*st.estimated_speedup, std::sqrt(2.0), 1e-9);
}

TEST(LoopStatusTest, CountsByStatus) {
    using S = iteration_status;
    const auto st = compute_status(history({S::positive, S::negative, S::rejected, S::rejected}), 10, std::nullopt);
    EXPECT_EQ(st.positive, 1);
    EXPECT_EQ(st.negative, 1);
    EXPECT_EQ(st.rejected, 2);
    EXPECT_EQ(st.iterations, 4);
}
