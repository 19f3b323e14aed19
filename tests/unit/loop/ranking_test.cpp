// Unit under test: loop/ranking — eligibility and the median / mean / earliest order.
#include <gtest/gtest.h>

#include "loop/ranking.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;
using S = iteration_status;

TEST(RankingTest, RanksByGeomeanMedian) {
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::positive, 2, 8), record(2, S::positive, 2, 4)};
    const auto r = rank_versions(rs);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].number, 2);
    EXPECT_EQ(r[1].number, 1);
    EXPECT_EQ(r[2].number, 0);
    EXPECT_EQ(best_version(rs), 2);
}

TEST(RankingTest, TiesGoToTheMeanThenTheEarliest) {
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::positive, 2, 4, 1.2),
                                     record(2, S::positive, 2, 4, 1.1), record(3, S::positive, 2, 4, 1.1)};
    const auto r = rank_versions(rs);
    EXPECT_EQ(r[0].number, 2);  // same median as 1 and 3, lower mean than 1, earlier than 3
    EXPECT_EQ(r[1].number, 3);
    EXPECT_EQ(r[2].number, 1);
}

TEST(RankingTest, NegativeRejectedAndPartialVersionsAreNotEligible) {
    auto partial = record(3, S::positive, 0.1, 0.1);
    partial.gate_partial = true;
    std::vector<iteration_record> rs{record(0, S::baseline, 4, 8), record(1, S::negative, 1, 1), record(2, S::rejected), partial};
    EXPECT_EQ(best_version(rs), 0);
    EXPECT_NE(ineligibility(rs[1]).find("negative"), std::string::npos);
    EXPECT_EQ(ineligibility(rs[2]), "gate not green");
    EXPECT_NE(ineligibility(rs[3]).find("partial"), std::string::npos);
}

TEST(RankingTest, TheRuleSaysProfilesAreMissing) {
    EXPECT_NE(eligibility_rule_text().find("profile"), std::string::npos);
    EXPECT_NE(eligibility_rule_text().find("missing"), std::string::npos);
    EXPECT_EQ(record(1, S::positive).profile_status, "missing");
}
