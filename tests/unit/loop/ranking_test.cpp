// Unit under test: loop/ranking — eligibility and the median / mean / earliest order.
#include <gtest/gtest.h>

#include "loop/ranking.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;
using S = iteration_status;

TEST(RankingTest, RanksByGeomeanMedian) {
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::positive, 2, 8), record(2, S::positive, 2, 4)};
    const auto r = rank_versions(rs, ab_target_policy());
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].number, 2);
    EXPECT_EQ(r[1].number, 1);
    EXPECT_EQ(r[2].number, 0);
    EXPECT_EQ(best_version(rs, ab_target_policy()), 2);
}

TEST(RankingTest, TiesGoToTheMeanThenTheEarliest) {
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::positive, 2, 4, 1.2),
                                     record(2, S::positive, 2, 4, 1.1), record(3, S::positive, 2, 4, 1.1)};
    const auto r = rank_versions(rs, ab_target_policy());
    EXPECT_EQ(r[0].number, 2);  // same median as 1 and 3, lower mean than 1, earlier than 3
    EXPECT_EQ(r[1].number, 3);
    EXPECT_EQ(r[2].number, 1);
}

TEST(RankingTest, NegativeRejectedAndPartialVersionsAreNotEligible) {
    auto partial = record(3, S::positive, 0.1, 0.1);
    partial.gate_partial = true;
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::negative, 1, 1), record(2, S::rejected), partial};
    EXPECT_EQ(best_version(rs, ab_target_policy()), 0);
    EXPECT_NE(ineligibility(rs[1], ab_target_policy()).find("negative"), std::string::npos);
    EXPECT_EQ(ineligibility(rs[2], ab_target_policy()), "gate not green");
    EXPECT_NE(ineligibility(rs[3], ab_target_policy()).find("partial"), std::string::npos);
}

TEST(RankingTest, PromotionNeedsAFullProfileUnlessWaived) {
    auto full = record(1, S::positive, 2, 4);
    full.profile_status = "full";
    auto targeted = record(2, S::positive, 1, 2);  // faster, but only a targeted profile
    targeted.profile_status = "targeted";
    auto cpu = record(0, S::baseline, 4, 8);
    cpu.profile_status = "n/a";                    // not a CUDA op: the rule does not apply
    std::vector<iteration_record> rs{cpu, full, targeted};
    EXPECT_EQ(best_version(rs, promotion_policy(false)), 1);
    EXPECT_NE(ineligibility(targeted, promotion_policy(false)).find("no full profile"), std::string::npos);
    EXPECT_NE(ineligibility(targeted, promotion_policy(false)).find("--allow-unprofiled"), std::string::npos);
    EXPECT_EQ(best_version(rs, promotion_policy(true)), 2);
    EXPECT_EQ(best_version(rs, ab_target_policy()), 2);  // iterate's target needs no profile
    EXPECT_NE(eligibility_rule_text(promotion_policy(false)).find("full Nsight Compute profile"), std::string::npos);
    EXPECT_NE(eligibility_rule_text(promotion_policy(true)).find("NOT required"), std::string::npos);
}

TEST(RankingTest, SuspectVersionsAreNeverPromotedButASuspectBaselineStaysTheTarget) {
    auto base = record(0, S::baseline, 4, 8);
    base.profile_status = "full";
    auto cheat = record(1, S::positive, 0.1, 0.1);
    cheat.profile_status = "full";
    cheat.suspect = true;
    cheat.suspect_reasons = {"below_floor: fwd/s measured 0.0001 ms", "bytes_collapsed: fwd/s moved 10 DRAM bytes"};
    std::vector<iteration_record> rs{base, cheat};
    EXPECT_EQ(best_version(rs, promotion_policy(true)), 0);
    EXPECT_EQ(best_version(rs, ab_target_policy()), 0);
    EXPECT_NE(ineligibility(cheat, promotion_policy(true)).find("suspect: below_floor"), std::string::npos);
    EXPECT_NE(ineligibility(cheat, promotion_policy(true)).find("; bytes_collapsed"), std::string::npos)
        << "every reason is named, not only the first";
    rs[0].suspect = true;  // an over-declared spec makes v0 suspect too: nothing to promote …
    EXPECT_FALSE(best_version(rs, promotion_policy(true)).has_value());
    EXPECT_EQ(best_version(rs, ab_target_policy()), 0);  // … but the loop still has its target
}
