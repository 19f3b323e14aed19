// Unit under test: loop/sibling_choice — which sibling of a parallel round is promoted, and that
// the others that beat the same best are marked outpaced and are no longer eligible as the best.
#include <gtest/gtest.h>

#include "loop/ranking.hpp"
#include "loop/sibling_choice.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;
using S = iteration_status;

namespace {

iteration_record sibling(int n, S st, double speedup, double ms = 1.0) {
    auto r = record(n, st, ms, ms);
    r.vs_best = 3;
    r.reason = "FASTER";
    if (st != S::rejected) r.overall = kloop::measure::ab_result{speedup, speedup * 0.95, speedup * 1.05,
                                                                 st == S::positive ? kloop::measure::ab_verdict::faster
                                                                                   : kloop::measure::ab_verdict::same};
    return r;
}

}  // namespace

TEST(SiblingChoiceTest, TheLargestSpeedupAgainstTheSameBestIsPromotedAndTheOtherPositivesAreOutpaced) {
    std::vector<iteration_record> round{sibling(4, S::positive, 1.20), sibling(5, S::negative, 1.01),
                                        sibling(6, S::positive, 1.45), sibling(7, S::rejected, 0),
                                        sibling(8, S::positive, 1.30, 0.5)};
    EXPECT_EQ(choose_sibling(round), 6);
    EXPECT_FALSE(round[2].outpaced_by);
    EXPECT_EQ(round[0].outpaced_by, 6);
    EXPECT_EQ(round[4].outpaced_by, 6);
    EXPECT_FALSE(round[1].outpaced_by);  // negative and rejected siblings keep what they are
    EXPECT_FALSE(round[3].outpaced_by);
    EXPECT_NE(round[0].reason.find("not promoted: its sibling v6 beat the same best by more (x1.450 against x1.200)"),
              std::string::npos)
        << round[0].reason;
    EXPECT_EQ(round[0].status, S::positive);  // its change did beat the best
    // v8's median from its own run is the lowest of all: without the mark, ranking would pick it.
    std::vector<iteration_record> records{record(0, S::baseline, 4, 4), record(1, S::negative), record(2, S::negative),
                                          sibling(3, S::positive, 1.1, 2.0)};
    records[3].vs_best = 0;
    for (const auto& r : round) records.push_back(r);
    EXPECT_EQ(best_version(records, ab_target_policy()), 6);
    EXPECT_NE(ineligibility(round[4], ab_target_policy()).find("outpaced: its sibling v6"), std::string::npos);
}

TEST(SiblingChoiceTest, ATieGoesToTheEarlierSiblingAndASuspectOneIsNeverTheWinner) {
    std::vector<iteration_record> tie{sibling(4, S::positive, 1.3), sibling(5, S::positive, 1.3)};
    EXPECT_EQ(choose_sibling(tie), 4);
    EXPECT_EQ(tie[1].outpaced_by, 4);

    std::vector<iteration_record> suspect{sibling(4, S::positive, 2.0), sibling(5, S::positive, 1.2)};
    suspect[0].suspect = true;
    EXPECT_EQ(choose_sibling(suspect), 5);
    EXPECT_FALSE(suspect[0].outpaced_by);  // ineligible already, for its own reason
}

TEST(SiblingChoiceTest, WithoutAPositiveSiblingNothingIsPromotedOrMarked) {
    std::vector<iteration_record> round{sibling(4, S::negative, 1.02), sibling(5, S::rejected, 0)};
    EXPECT_EQ(choose_sibling(round), std::nullopt);
    for (const auto& r : round) EXPECT_FALSE(r.outpaced_by);
    std::vector<iteration_record> none;
    EXPECT_EQ(choose_sibling(none), std::nullopt);
}

TEST(SiblingChoiceTest, TheMarkAndTheDeviceSurviveTheRecord) {
    auto r = sibling(5, S::positive, 1.2);
    r.outpaced_by = 6;
    r.device = "GPU-1234";
    const auto back = iteration_record_from_json(to_json(r));
    EXPECT_EQ(back.outpaced_by, 6);
    EXPECT_EQ(back.device, "GPU-1234");
    auto plain = to_json(sibling(4, S::positive, 1.2));
    EXPECT_TRUE(plain.at("outpaced_by").is_null());
    plain.erase("outpaced_by");  // a record written before the field existed
    plain.erase("device");
    const auto old = iteration_record_from_json(plain);
    EXPECT_FALSE(old.outpaced_by);
    EXPECT_EQ(old.device, "");
}
