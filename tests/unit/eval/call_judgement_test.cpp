// Unit under test: eval/call_judgement — verdicts on a checked call from the runner's raw facts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "eval/call_judgement.hpp"

namespace {

kloop::runner::call_plan plan() {
    kloop::runner::call_plan p;
    p.mode = "fwd";
    p.shape = "s";
    kloop::runner::tensor_plan x;
    x.name = "x";
    x.shape = {4, 8};
    kloop::runner::tensor_plan y = x;
    y.name = "y";
    y.tol.atol = 1e-5;
    y.tol.rtol = 1e-5;
    p.inputs = {x};
    p.outputs = {y};
    return p;
}

nlohmann::json clean_result() {
    kloop::check::compare_metrics m;
    m.n = 32;
    return {{"return_code", 0},
            {"changed_inputs", nlohmann::json::array()},
            {"red_zone_violations", nlohmann::json::array()},
            {"outputs", {{{"name", "y"}, {"metrics", m}, {"reference_nonfinite", 0}}}}};
}

}  // namespace

TEST(CallJudgementTest, CleanCallPasses) {
    const auto j = kloop::eval::judge_call(plan(), clean_result());
    EXPECT_TRUE(j.pass) << j.reason;
    EXPECT_TRUE(j.reason.empty());
    ASSERT_EQ(j.outputs.size(), 1u);
    EXPECT_TRUE(j.outputs[0].pass);
}

TEST(CallJudgementTest, NonZeroReturnFails) {
    auto r = clean_result();
    r["return_code"] = 7;
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_NE(j.reason.find("returned 7"), std::string::npos) << j.reason;
}

TEST(CallJudgementTest, ChangedInputNamesTensorAndIndex) {
    auto r = clean_result();
    r["changed_inputs"] = {{{"name", "x"}, {"first_changed", 9}}};
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_TRUE(j.inputs_changed);
    EXPECT_NE(j.reason.find("modified input 'x'"), std::string::npos) << j.reason;
    EXPECT_NE(j.reason.find("[1, 1]"), std::string::npos) << j.reason;
}

TEST(CallJudgementTest, RedZoneDamageFails) {
    auto r = clean_result();
    r["red_zone_violations"] = {{{"name", "y"}, {"byte_offset", 128}}};
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_TRUE(j.red_zone_damage);
    EXPECT_NE(j.reason.find("past the end"), std::string::npos) << j.reason;
}

TEST(CallJudgementTest, NanLeftInOutputIsAnUnwrittenOutput) {
    auto r = clean_result();
    kloop::check::compare_metrics m;
    m.n = 32;
    m.nan_count = 8;
    m.mismatches = 8;
    m.first_bad = 24;
    r["outputs"][0]["metrics"] = m;
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_TRUE(j.unwritten_outputs);
    EXPECT_NE(j.reason.find("output 'y'"), std::string::npos) << j.reason;
}

TEST(CallJudgementTest, BrokenReferenceIsBlamedOnTheReference) {
    auto r = clean_result();
    r["outputs"][0]["reference_nonfinite"] = 3;
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_NE(j.reason.find("reference produced 3"), std::string::npos) << j.reason;
    auto r2 = clean_result();
    r2["reference_return_code"] = 2;
    EXPECT_NE(kloop::eval::judge_call(plan(), r2).reason.find("the reference returned 2"), std::string::npos);
}

TEST(CallJudgementTest, DeviceErrorIsTheReason) {
    auto r = clean_result();
    r["device_error"] = "cudaErrorIllegalAddress: an illegal memory access was encountered";
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_NE(j.reason.find("cudaErrorIllegalAddress"), std::string::npos) << j.reason;
}

TEST(CallJudgementTest, ARecordWithoutAnOutputsComparisonFails) {
    auto r = clean_result();
    r["outputs"] = nlohmann::json::array();  // a forged line that claims a clean call
    const auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_NE(j.reason.find("no comparison for output 'y'"), std::string::npos) << j.reason;
    r.erase("outputs");
    EXPECT_FALSE(kloop::eval::judge_call(plan(), r).pass);
}

TEST(CallJudgementTest, GuardOnlyRecordIsJudgedOnRedZonesAndInputs) {
    nlohmann::json r = {{"return_code", 0},         {"guard_only", true},
                        {"changed_inputs", nlohmann::json::array()},
                        {"red_zone_violations", {{{"name", "y"}, {"byte_offset", 40}}}},
                        {"outputs", nlohmann::json::array()}};
    auto j = kloop::eval::judge_call(plan(), r);
    EXPECT_FALSE(j.pass);
    EXPECT_TRUE(j.red_zone_damage);
    r["red_zone_violations"] = nlohmann::json::array();
    j = kloop::eval::judge_call(plan(), r);
    EXPECT_TRUE(j.pass) << j.reason;
}
