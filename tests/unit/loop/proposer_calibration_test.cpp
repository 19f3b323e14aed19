// Unit under test: loop/record/proposer_calibration — hits, hit rate, the spread of the misses
// and their bias, overall and per kind, over a loop's records.
#include <gtest/gtest.h>

#include <cmath>

#include "loop/record/proposer_calibration.hpp"
#include "loop_test_util.hpp"

using namespace kloop::loop;
using kloop::loop::testing::record;

namespace {

scored_prediction scored(prediction_kind kind, prediction_outcome outcome, std::optional<double> off_by) {
    scored_prediction p;
    p.claim.kind = kind;
    p.score.outcome = outcome;
    p.score.off_by = off_by;
    return p;
}

}  // namespace

TEST(ProposerCalibrationTest, TalliesHitsSpreadAndBiasPerKind) {
    std::vector<iteration_record> records = {record(0, iteration_status::baseline), record(1, iteration_status::positive),
                                             record(2, iteration_status::negative), record(3, iteration_status::rejected)};
    records[1].predictions = {scored(prediction_kind::speedup, prediction_outcome::hit, 1.0),
                              scored(prediction_kind::speedup, prediction_outcome::miss, 0.5),   // optimistic
                              scored(prediction_kind::profile, prediction_outcome::miss, 1.25)}; // pessimistic
    records[2].predictions = {scored(prediction_kind::speedup, prediction_outcome::miss, 0.8),   // optimistic
                              scored(prediction_kind::no_change, prediction_outcome::hit, 1.0)};
    records[3].predictions = {scored(prediction_kind::speedup, prediction_outcome::unscored, std::nullopt)};
    const auto c = calibrate(records);
    EXPECT_EQ(c.all.made, 6);
    EXPECT_EQ(c.all.scored, 5);
    EXPECT_EQ(c.all.hits, 2);
    EXPECT_DOUBLE_EQ(*c.all.hit_rate(), 0.4);
    EXPECT_EQ(c.all.optimistic, 2);
    EXPECT_EQ(c.all.pessimistic, 1);
    // |ln 0.5| = 0.693, |ln 1.25| = 0.223, |ln 0.8| = 0.223: the median is 0.223
    EXPECT_NEAR(*c.all.median_abs_log_off_by, std::log(1.25), 1e-12);
    ASSERT_EQ(c.by_kind.size(), 3u);
    EXPECT_EQ(c.by_kind[0].first, prediction_kind::speedup);
    const auto& speedup = c.by_kind[0].second;
    EXPECT_EQ(speedup.made, 4);
    EXPECT_EQ(speedup.scored, 3);
    EXPECT_EQ(speedup.hits, 1);
    EXPECT_EQ(speedup.optimistic, 2);
    EXPECT_EQ(speedup.pessimistic, 0);
    EXPECT_NEAR(*speedup.median_abs_log_off_by, (std::log(2.0) + std::fabs(std::log(0.8))) / 2, 1e-12);
    EXPECT_EQ(c.by_kind[1].second.hits, 1);
    EXPECT_FALSE(c.by_kind[1].second.median_abs_log_off_by);
    EXPECT_EQ(c.by_kind[2].second.pessimistic, 1);
    const auto j = to_json(c);
    EXPECT_EQ(j.at("made"), 6);
    EXPECT_DOUBLE_EQ(j.at("hit_rate").get<double>(), 0.4);
    EXPECT_EQ(j.at("by_kind").at("no change").at("hits"), 1);
    EXPECT_EQ(j.at("by_kind").at("profile").at("pessimistic"), 1);
}

TEST(ProposerCalibrationTest, NoPredictionsNoRates) {
    const auto c = calibrate({record(0, iteration_status::baseline), record(1, iteration_status::negative)});
    EXPECT_EQ(c.all.made, 0);
    EXPECT_FALSE(c.all.hit_rate());
    EXPECT_FALSE(c.all.median_abs_log_off_by);
    EXPECT_TRUE(to_json(c).at("hit_rate").is_null());
}
