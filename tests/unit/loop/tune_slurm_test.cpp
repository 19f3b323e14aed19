// Unit under test: loop/tune_slurm's race_from_record — a race run as a Slurm task comes back as
// its `kloop compare` record; classified after that round trip (report::to_json, then
// race_from_record), every kind of outcome is what it was before: positive, negative, each
// rejection kind with its reason, and a base that fails its own gate.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "loop/record/classification.hpp"
#include "loop/tune_slurm.hpp"
#include "loop_test_util.hpp"
#include "report/ab_json.hpp"

using namespace kloop;
using namespace kloop::loop;
using kloop::loop::testing::ab_with;
using measure::ab_verdict;

namespace {

eval::ab_evaluation round_trip(const eval::ab_evaluation& ab) { return race_from_record(report::to_json(ab)); }

void expect_same_class(const eval::ab_evaluation& ab, const std::string& what) {
    const auto want = classify(ab, "kLanes=32");
    const auto got = classify(round_trip(ab), "kLanes=32");
    EXPECT_EQ(got.status, want.status) << what;
    EXPECT_EQ(got.kind, want.kind) << what;
    EXPECT_EQ(got.reason, want.reason) << what;
    ASSERT_EQ(got.overall.has_value(), want.overall.has_value()) << what;
    if (want.overall) {
        EXPECT_DOUBLE_EQ(got.overall->speedup, want.overall->speedup) << what;
        EXPECT_EQ(got.overall->verdict, want.overall->verdict) << what;
    }
}

}  // namespace

TEST(TuneSlurmTest, VerdictsSurviveTheRecord) {
    expect_same_class(ab_with(ab_verdict::faster, 1.30, 1.25, 1.36), "faster");
    expect_same_class(ab_with(ab_verdict::slower, 0.80, 0.78, 0.82), "slower");
    expect_same_class(ab_with(ab_verdict::ambiguous, 1.05, 0.97, 1.12), "ambiguous");
    EXPECT_EQ(classify(round_trip(ab_with(ab_verdict::faster, 1.3, 1.25, 1.36)), "x").status, iteration_status::positive);
}

TEST(TuneSlurmTest, RejectionsSurviveTheRecordWithTheirKindAndReason) {
    auto build = ab_with(ab_verdict::faster, 2, 2, 2);
    build.candidate.status = eval::disposition::build_failed;
    build.candidate.reason = "the candidate failed to build";
    build.candidate.candidate_build.diagnostics = "kernel.cpp:3:1: error: expected ';'\n";
    build.ok = false;
    expect_same_class(build, "build");
    EXPECT_EQ(classify(round_trip(build), "x").kind, rejection_kind::build);

    auto crash = ab_with(ab_verdict::faster, 2, 2, 2);
    crash.candidate.status = eval::disposition::gate_failed;
    crash.candidate.reason = "the gate is red";
    crash.candidate.gate.pass = false;
    crash.candidate.gate.runner_failure = "killed by SIGSEGV (signal 11) in the candidate";
    crash.ok = false;
    expect_same_class(crash, "crash");

    auto wrong = ab_with(ab_verdict::faster, 2, 2, 2);
    wrong.candidate.status = eval::disposition::gate_failed;
    wrong.candidate.reason = "the gate is red";
    wrong.candidate.gate.pass = false;
    eval::case_report cr;
    cr.mode = "fwd";
    cr.shape = "n1000_d777";
    cr.trial = 2;
    cr.reason = "output 'y': 3 mismatches";
    wrong.candidate.gate.cases.push_back(cr);
    wrong.ok = false;
    expect_same_class(wrong, "wrong result");
    EXPECT_NE(classify(round_trip(wrong), "x").reason.find("fwd/n1000_d777 trial 2: output 'y': 3 mismatches"),
              std::string::npos);

    auto integrity = ab_with(ab_verdict::faster, 3, 3, 3);
    integrity.candidate.integrity.push_back({"inputs_unchanged", eval::check_status::fail, "x changed"});
    expect_same_class(integrity, "integrity");
    EXPECT_EQ(classify(round_trip(integrity), "x").kind, rejection_kind::integrity);

    auto timed = ab_with(ab_verdict::faster, 3, 3, 3);
    timed.ok = false;
    timed.shapes[0].ok = false;
    timed.shapes[0].error = "candidate: 2 of 2 timed calls checked failed";
    timed.overall.reset();
    expect_same_class(timed, "timed-output check");
}

TEST(TuneSlurmTest, ABaseThatFailsItsGateIsStillSeen) {
    auto ab = ab_with(ab_verdict::faster, 3, 3, 3);
    ab.base.status = eval::disposition::gate_failed;
    ab.base.reason = "the gate is red";
    ab.base.gate.pass = false;
    ab.ok = false;
    const auto back = round_trip(ab);
    EXPECT_EQ(back.base.status, eval::disposition::gate_failed);
    EXPECT_FALSE(back.base.gate.pass);
    EXPECT_THROW((void)classify(back, "v2"), kloop::error);
}
