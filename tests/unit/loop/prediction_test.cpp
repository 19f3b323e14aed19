// Unit under test: loop/record/prediction — the claim grammar (every form, malformed claims named
// by file and line, unknown profile metrics), the proposal's Prediction lines and section, the
// scores (hit, miss and off_by both ways, no change, per shape, missing shape, rejected, profile
// facts present or absent) and their JSON round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "loop/proposal.hpp"
#include "loop/record/prediction.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;

namespace {

prediction parse(const std::string& claim) { return parse_prediction(claim, "p.md", 7); }

std::string refusal(const std::string& claim) {
    try {
        (void)parse(claim);
    } catch (const kloop::usage_error& e) {
        return e.what();
    }
    return "";
}

// A timed iteration: overall x`overall` with `verdict`, shapes fwd/a x`a` and fwd/b x1.0 (SAME).
iteration_record timed(double overall, kloop::measure::ab_verdict verdict, double a = 1.2) {
    auto r = record(1, iteration_status::negative);
    r.overall = kloop::measure::ab_result{overall, overall * 0.97, overall * 1.03, verdict};
    shape_comparison sa{"fwd", "a", true, "", {}, {}, kloop::measure::ab_result{a, a * 0.97, a * 1.03, kloop::measure::ab_verdict::faster}};
    shape_comparison sb{"fwd", "b", true, "", {}, {}, kloop::measure::ab_result{1.0, 0.98, 1.02, kloop::measure::ab_verdict::same}};
    r.ab = {sa, sb};
    return r;
}

}  // namespace

TEST(PredictionTest, ParsesEveryRangeForm) {
    auto p = parse("speedup 1.1-1.3");
    EXPECT_EQ(p.kind, prediction_kind::speedup);
    EXPECT_EQ(p.scope, "");
    EXPECT_DOUBLE_EQ(*p.low, 1.1);
    EXPECT_DOUBLE_EQ(*p.high, 1.3);
    EXPECT_EQ(p.line, 7);
    EXPECT_EQ(p.text, "speedup 1.1-1.3");
    p = parse("  SPEEDUP   1.1 .. 1.3 ");
    EXPECT_DOUBLE_EQ(*p.low, 1.1);
    EXPECT_DOUBLE_EQ(*p.high, 1.3);
    p = parse("speedup >= 1.05");
    EXPECT_DOUBLE_EQ(*p.low, 1.05);
    EXPECT_FALSE(p.high);
    p = parse("speedup \u22651.05");
    EXPECT_DOUBLE_EQ(*p.low, 1.05);
    EXPECT_FALSE(p.high);
    p = parse("speedup <=0.9");
    EXPECT_FALSE(p.low);
    EXPECT_DOUBLE_EQ(*p.high, 0.9);
    p = parse("speedup \u2264 0.9");
    EXPECT_DOUBLE_EQ(*p.high, 0.9);
    p = parse("speedup x1.2-x1.5");
    EXPECT_DOUBLE_EQ(*p.low, 1.2);
    EXPECT_DOUBLE_EQ(*p.high, 1.5);
}

TEST(PredictionTest, ParsesShapesNoChangeAndProfile) {
    auto p = parse("fwd/n4096_d1024 speedup 1.1-1.3");
    EXPECT_EQ(p.kind, prediction_kind::speedup);
    EXPECT_EQ(p.scope, "fwd/n4096_d1024");
    p = parse("No Change");
    EXPECT_EQ(p.kind, prediction_kind::no_change);
    EXPECT_EQ(p.scope, "");
    EXPECT_EQ(parse("no-change").kind, prediction_kind::no_change);
    p = parse("bwd/n1000_d777 no change");
    EXPECT_EQ(p.kind, prediction_kind::no_change);
    EXPECT_EQ(p.scope, "bwd/n1000_d777");
    p = parse("profile dram_pct_of_peak 60-80%");
    EXPECT_EQ(p.kind, prediction_kind::profile);
    EXPECT_EQ(p.metric, "dram_pct_of_peak");
    EXPECT_DOUBLE_EQ(*p.low, 60);
    EXPECT_DOUBLE_EQ(*p.high, 80);
    p = parse("profile achieved_occupancy_pct >= 50");
    EXPECT_EQ(p.metric, "achieved_occupancy_pct");
    EXPECT_DOUBLE_EQ(*p.low, 50);
}

TEST(PredictionTest, MalformedClaimsNameTheFileAndTheLine) {
    for (const char* bad : {"faster", "speedup", "speedup fast", "speedup 1.3-1.1", "speedup 0-1.2", "fwd speedup 1.1-1.2",
                            "fwd/a/b speedup 1-2", "fwd/a sideways", "profile dram_pct_of_peak", "speedup >=", ""}) {
        const auto m = refusal(bad);
        EXPECT_NE(m.find("proposal 'p.md' line 7"), std::string::npos) << bad << ": " << m;
        EXPECT_NE(m.find("speedup A-B"), std::string::npos) << bad << ": " << m;  // the grammar
    }
}

TEST(PredictionTest, AnUnknownProfileMetricListsTheKnownOnes) {
    const auto m = refusal("profile warp_happiness 1-2");
    EXPECT_NE(m.find("line 7"), std::string::npos) << m;
    EXPECT_NE(m.find("warp_happiness"), std::string::npos) << m;
    EXPECT_NE(m.find("dram_pct_of_peak"), std::string::npos) << m;
    EXPECT_NE(m.find("pct_of_floor"), std::string::npos) << m;
}

TEST(PredictionTest, ProposalLinesAndSectionsCarryPredictionsAndTheOverride) {
    const auto p = parse_proposal("Direction: d\nExpected: e\nPrediction: speedup 1.1-1.3\nBlocked-override: new tiling this time\n"
                                  "## Predictions\n- fwd/a no change\n* profile pct_of_floor >=70\n\n## Strategy tags\n- t\n",
                                  "p.md");
    ASSERT_EQ(p.predictions.size(), 3u);
    EXPECT_EQ(p.predictions[0].line, 3);
    EXPECT_EQ(p.predictions[1].scope, "fwd/a");
    EXPECT_EQ(p.predictions[1].line, 6);
    EXPECT_EQ(p.predictions[2].metric, "pct_of_floor");
    EXPECT_EQ(p.expected, "e");  // the free text stays
    EXPECT_EQ(p.blocked_override, "new tiling this time");
    const auto q = parse_proposal("Direction: d\nExpected: e\n## Blocked override\nthe old failure\nwas a bug\n## Strategy tags\n- t\n",
                                  "p.md");
    EXPECT_TRUE(q.predictions.empty());
    EXPECT_EQ(q.blocked_override, "the old failure was a bug");
    try {
        (void)parse_proposal("Direction: d\nExpected: e\n\n## Prediction\n- speedup 1.1-1.3\n- quick\n## Strategy tags\n- t\n",
                             "dir/optimization_proposal.md");
        FAIL();
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("proposal 'dir/optimization_proposal.md' line 6"), std::string::npos) << e.what();
    }
}

TEST(PredictionTest, SpeedupHitsAndMissesBothWays) {
    const auto r = timed(1.2, kloop::measure::ab_verdict::faster);
    auto s = score_prediction(parse("speedup 1.1-1.3"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::hit);
    EXPECT_DOUBLE_EQ(*s.measured, 1.2);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.0);
    s = score_prediction(parse("speedup 1.5-2"), r);  // optimistic: measured below
    EXPECT_EQ(s.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.2 / 1.5);
    s = score_prediction(parse("speedup <=1.0"), r);  // pessimistic: measured above
    EXPECT_EQ(s.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.2);
    EXPECT_EQ(score_prediction(parse("speedup >=1.2"), r).outcome, prediction_outcome::hit);
}

TEST(PredictionTest, ScoresOneShapeAndNoChange) {
    const auto r = timed(1.1, kloop::measure::ab_verdict::faster, 1.4);
    auto s = score_prediction(parse("fwd/a speedup 1.3-1.5"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::hit);
    EXPECT_DOUBLE_EQ(*s.measured, 1.4);
    s = score_prediction(parse("fwd/b no change"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::hit);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.0);
    s = score_prediction(parse("fwd/a no change"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.4);  // the measured speedup
    s = score_prediction(parse("no change"), timed(1.0, kloop::measure::ab_verdict::same));
    EXPECT_EQ(s.outcome, prediction_outcome::hit);
    s = score_prediction(parse("no change"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*s.off_by, 1.1);
}

TEST(PredictionTest, UnscoredWithTheReason) {
    auto s = score_prediction(parse("bwd/a speedup 1.1-1.3"), timed(1.2, kloop::measure::ab_verdict::faster));
    EXPECT_EQ(s.outcome, prediction_outcome::unscored);
    EXPECT_NE(s.reason.find("no such shape: bwd/a"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("fwd/a, fwd/b"), std::string::npos) << s.reason;
    EXPECT_FALSE(s.measured);
    const auto rejected = record(2, iteration_status::rejected);
    for (const char* claim : {"speedup 1.1-1.3", "fwd/a speedup 1.1-1.3", "no change"}) {
        s = score_prediction(parse(claim), rejected);
        EXPECT_EQ(s.outcome, prediction_outcome::unscored) << claim;
        EXPECT_EQ(s.reason, "rejected before timing (gate)") << claim;
    }
}

TEST(PredictionTest, ProfileFactsPresentOrAbsent) {
    auto r = timed(1.2, kloop::measure::ab_verdict::faster);
    r.profile_status = "unavailable";
    r.profile_note = "ncu not found";
    auto s = score_prediction(parse("profile dram_pct_of_peak 60-80"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::unscored);
    EXPECT_EQ(s.reason, "no profile (unavailable: ncu not found)");
    r.profile_facts = {{"dram_pct_of_peak", 90.0}};
    s = score_prediction(parse("profile dram_pct_of_peak 60-80"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*s.off_by, 90.0 / 80.0);
    s = score_prediction(parse("profile achieved_occupancy_pct 60-80"), r);
    EXPECT_EQ(s.outcome, prediction_outcome::unscored);
    EXPECT_EQ(s.reason, "the profile has no achieved_occupancy_pct");
}

TEST(PredictionTest, ScoredPredictionsRoundTripAndBrief) {
    auto r = timed(1.2, kloop::measure::ab_verdict::faster);
    for (const char* claim : {"speedup 1.1-1.3", "speedup >=1.5", "bwd/x no change"}) r.predictions.push_back({parse(claim), {}});
    score_predictions(r);
    EXPECT_EQ(predictions_brief(r.predictions), "pred 1/2 hit, 1 unscored");
    EXPECT_EQ(predictions_brief({}), "");
    const auto back = iteration_record_from_json(to_json(r));
    ASSERT_EQ(back.predictions.size(), 3u);
    EXPECT_EQ(back.predictions[1].claim.text, "speedup >=1.5");
    EXPECT_FALSE(back.predictions[1].claim.high);
    EXPECT_EQ(back.predictions[1].score.outcome, prediction_outcome::miss);
    EXPECT_DOUBLE_EQ(*back.predictions[1].score.off_by, 1.2 / 1.5);
    EXPECT_EQ(back.predictions[2].claim.kind, prediction_kind::no_change);
    EXPECT_EQ(back.predictions[2].score.outcome, prediction_outcome::unscored);
    // A record written before predictions existed reads as having none.
    auto old = to_json(r);
    old.erase("predictions");
    old.at("proposal").erase("blocked_override");
    old.at("profile").erase("facts");
    const auto read = iteration_record_from_json(old);
    EXPECT_TRUE(read.predictions.empty());
    EXPECT_TRUE(read.blocked_override.empty());
    EXPECT_TRUE(read.profile_facts.empty());
}
