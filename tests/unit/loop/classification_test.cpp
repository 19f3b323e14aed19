// Unit under test: loop/classification — positive / negative / rejected against the current
// best, from synthetic A/B results.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "loop/record/classification.hpp"
#include "loop_test_util.hpp"

using namespace kloop;
using namespace kloop::loop;
using kloop::loop::testing::ab_with;
using measure::ab_verdict;

TEST(ClassificationTest, FasterOverallIsPositive) {
    const auto c = classify(ab_with(ab_verdict::faster, 1.30, 1.25, 1.36), "v1");
    EXPECT_EQ(c.status, iteration_status::positive);
    EXPECT_EQ(c.kind, rejection_kind::none);
    ASSERT_TRUE(c.overall);
    EXPECT_DOUBLE_EQ(c.overall->speedup, 1.30);
    EXPECT_NE(c.reason.find("FASTER"), std::string::npos);
    EXPECT_NE(c.reason.find("vs v1"), std::string::npos);
}

TEST(ClassificationTest, SameSlowerAndAmbiguousAreNegative) {
    for (auto v : {ab_verdict::same, ab_verdict::slower, ab_verdict::ambiguous}) {
        const auto c = classify(ab_with(v, 1.01, 0.99, 1.03), "v0");
        EXPECT_EQ(c.status, iteration_status::negative) << measure::to_string(v);
        EXPECT_NE(c.reason.find(measure::to_string(v)), std::string::npos);
    }
}

TEST(ClassificationTest, AFasterPointEstimateInsideTheNoiseIsStillNegative) {
    // speedup 1.05 but the interval reaches below 1 + min_effect: the A/B says AMBIGUOUS.
    const auto c = classify(ab_with(ab_verdict::ambiguous, 1.05, 0.97, 1.12), "v2");
    EXPECT_EQ(c.status, iteration_status::negative);
}

TEST(ClassificationTest, BuildFailureIsRejectedAsBuild) {
    auto ab = ab_with(ab_verdict::faster, 2, 2, 2);
    ab.candidate.status = eval::disposition::build_failed;
    ab.candidate.reason = "the candidate failed to build";
    ab.candidate.candidate_build.diagnostics = "kernel.cpp:3:1: error: expected ';'\n";
    ab.ok = false;
    const auto c = classify(ab, "v0");
    EXPECT_EQ(c.status, iteration_status::rejected);
    EXPECT_EQ(c.kind, rejection_kind::build);
    EXPECT_NE(c.reason.find("expected ';'"), std::string::npos) << c.reason;
}

TEST(ClassificationTest, GateFailureKindsComeFromTheEvaluation) {
    struct row {
        std::string runner_failure;
        std::string check;
        rejection_kind want;
    };
    for (const auto& r : std::vector<row>{{"timed out after 5.0 s in the candidate", "", rejection_kind::timeout},
                                          {"killed by SIGSEGV (signal 11) in the candidate", "", rejection_kind::crash},
                                          {"", "red_zones", rejection_kind::integrity},
                                          {"", "", rejection_kind::gate}}) {
        auto ab = ab_with(ab_verdict::faster, 2, 2, 2);
        ab.candidate.status = eval::disposition::gate_failed;
        ab.candidate.reason = "the gate is red";
        ab.candidate.gate.pass = false;
        ab.candidate.gate.runner_failure = r.runner_failure;
        eval::case_report cr;
        cr.mode = "fwd";
        cr.shape = "a";
        cr.reason = "output 'y': 3 mismatches";
        ab.candidate.gate.cases.push_back(cr);
        if (!r.check.empty()) ab.candidate.integrity.push_back({r.check, eval::check_status::fail, "one element past y"});
        ab.ok = false;
        const auto c = classify(ab, "v0");
        EXPECT_EQ(c.status, iteration_status::rejected);
        EXPECT_EQ(c.kind, r.want) << r.runner_failure << r.check;
        EXPECT_NE(c.reason.find("the gate is red"), std::string::npos);
    }
}

TEST(ClassificationTest, FailedTimedCheckIsRejectedNotNegative) {
    auto ab = ab_with(ab_verdict::faster, 3, 3, 3);
    ab.ok = false;
    ab.shapes[0].ok = false;
    ab.shapes[0].error = "candidate: 2 of 2 timed calls checked failed";
    ab.overall.reset();
    const auto c = classify(ab, "v1");
    EXPECT_EQ(c.status, iteration_status::rejected);
    EXPECT_EQ(c.kind, rejection_kind::integrity);
}

TEST(ClassificationTest, IntegrityFailureWithAGreenGateIsRejected) {
    auto ab = ab_with(ab_verdict::faster, 3, 3, 3);
    ab.candidate.integrity.push_back({"inputs_unchanged", eval::check_status::fail, "x changed"});
    const auto c = classify(ab, "v1");
    EXPECT_EQ(c.status, iteration_status::rejected);
    EXPECT_EQ(c.kind, rejection_kind::integrity);
}

TEST(ClassificationTest, ABestThatFailsItsOwnGateIsAnErrorNotARejection) {
    auto ab = ab_with(ab_verdict::faster, 3, 3, 3);
    ab.base.status = eval::disposition::gate_failed;
    ab.base.reason = "the gate is red";
    ab.ok = false;
    EXPECT_THROW((void)classify(ab, "v2"), kloop::error);
}

TEST(ClassificationTest, StatusNamesRoundTrip) {
    for (auto s : {iteration_status::baseline, iteration_status::positive, iteration_status::negative, iteration_status::rejected})
        EXPECT_EQ(iteration_status_from_string(to_string(s)), s);
    EXPECT_THROW((void)iteration_status_from_string("better"), std::invalid_argument);
    EXPECT_EQ(rejection_kind_from_string("timeout"), rejection_kind::timeout);
}

// The physics floor in the loop (eval/physics_floor.hpp): the A/B medians of a candidate faster
// than the hardware allows reject it, whatever its verdict against the best.
namespace {

eval::physics_bounds_choice h200_bounds() {
    return {eval::gpu_physics_bounds(*profile::datasheet_peaks("NVIDIA H200"), 60ull << 20), ""};
}

}  // namespace

TEST(ClassificationTest, ACandidateBelowThePhysicsFloorIsRejectedNeverPositive) {
    // 4 GB read in 1 ms by the best (4.0 TB/s); the candidate "1.8x faster" claims 7.2 TB/s.
    auto ab = ab_with(ab_verdict::faster, 1.8, 1.7, 1.9);
    ab.shapes[0].bytes = 4.0e9;
    eval::judge_ab_physics(ab, h200_bounds());
    EXPECT_FALSE(ab.ok);
    EXPECT_EQ(ab.candidate.status, eval::disposition::gate_failed);
    EXPECT_EQ(ab.base.status, eval::disposition::passed);
    const auto c = classify(ab, "v0");
    EXPECT_EQ(c.status, iteration_status::rejected);
    EXPECT_EQ(c.kind, rejection_kind::integrity);
    EXPECT_NE(c.reason.find("physics_floor"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("fwd/a"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("4.80 TB/s"), std::string::npos) << c.reason;
}

TEST(ClassificationTest, AnHonestFasterCandidateStaysPositiveUnderThePhysicsFloor) {
    auto ab = ab_with(ab_verdict::faster, 1.1, 1.05, 1.15);  // 4.4 TB/s: under the 4.8 TB/s peak
    ab.shapes[0].bytes = 4.0e9;
    eval::judge_ab_physics(ab, h200_bounds());
    EXPECT_TRUE(ab.ok);
    const auto c = classify(ab, "v0");
    EXPECT_EQ(c.status, iteration_status::positive) << c.reason;
    bool found = false;
    for (const auto& chk : ab.candidate.integrity)
        if (chk.name == "physics_floor") {
            found = true;
            EXPECT_EQ(chk.status, eval::check_status::pass) << chk.detail;
        }
    EXPECT_TRUE(found);
}

TEST(ClassificationTest, ABestBelowThePhysicsFloorIsNotTheCandidatesFault) {
    // The best's own medians are impossible (recorded before the check existed): no record, an error.
    auto ab = ab_with(ab_verdict::slower, 0.5, 0.45, 0.55);
    ab.shapes[0].bytes = 8.0e9;  // best 1 ms = 8 TB/s; candidate 2 ms = 4 TB/s
    eval::judge_ab_physics(ab, h200_bounds());
    EXPECT_EQ(ab.candidate.status, eval::disposition::passed);
    EXPECT_EQ(ab.base.status, eval::disposition::gate_failed);
    EXPECT_THROW((void)classify(ab, "v3"), kloop::error);
}
