// Unit under test: runner/job — the job's JSON form, in particular the A/B phase ("ab") and its
// second library (base_lib).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runner/job.hpp"

namespace {

using kloop::runner::job;
using kloop::runner::job_phase;

job sample_ab_job() {
    job j;
    j.phase = job_phase::ab;
    j.candidate_lib = "/cache/cand.so";
    j.base_lib = "/cache/base.so";
    j.reference_lib = "/cache/ref.so";
    j.evict_bytes = 64 << 20;
    kloop::runner::call_plan c;
    c.mode = "fwd";
    c.shape = "n4_d8";
    c.entry = "f";
    c.reference_entry = "f_ref";
    c.dims = {{"N", 4}, {"D", 8}};
    kloop::runner::tensor_plan x;
    x.name = "x";
    x.shape = {4, 8};
    x.init = "normal(0, 1)";
    c.inputs.push_back(x);
    kloop::runner::tensor_plan y;
    y.name = "y";
    y.shape = {4, 8};
    y.tol.atol = 1e-5;
    c.outputs.push_back(y);
    j.calls.push_back(c);
    kloop::runner::bench_item b;
    b.id = 0;
    b.call = 0;
    b.seed = 42;
    b.input_sets = 5;
    b.flush_bytes = 1024;
    b.check_every = 4;
    b.tail_checks = 7;
    b.timer_min_windows = 3;
    b.stop.min_samples = 12;
    b.stop.max_time_s = 0.25;
    b.stop.plateau_window = 16;
    b.stop.plateau_max_drift = 0.05;
    j.bench.push_back(b);
    return j;
}

}  // namespace

TEST(JobTest, PhaseNamesRoundTrip) {
    for (auto p : {job_phase::gate, job_phase::bench, job_phase::ab})
        EXPECT_EQ(kloop::runner::job_phase_from_string(kloop::runner::to_string(p)), p);
    EXPECT_EQ(kloop::runner::to_string(job_phase::ab), "ab");
    EXPECT_THROW((void)kloop::runner::job_phase_from_string("abba"), std::runtime_error);
}

TEST(JobTest, AbJobRoundTripsThroughJson) {
    const job j = sample_ab_job();
    const nlohmann::json text = j;
    EXPECT_EQ(text.at("phase"), "ab");
    EXPECT_EQ(text.at("base_lib"), "/cache/base.so");
    const job back = nlohmann::json::parse(text.dump()).get<job>();
    EXPECT_EQ(back.phase, job_phase::ab);
    EXPECT_EQ(back.candidate_lib, j.candidate_lib);
    EXPECT_EQ(back.base_lib, j.base_lib);
    EXPECT_EQ(back.reference_lib, j.reference_lib);
    EXPECT_EQ(back.evict_bytes, j.evict_bytes);
    ASSERT_EQ(back.calls.size(), 1u);
    EXPECT_EQ(back.calls[0].entry, "f");
    EXPECT_EQ(back.calls[0].inputs.at(0).shape, (std::vector<std::int64_t>{4, 8}));
    ASSERT_EQ(back.bench.size(), 1u);
    EXPECT_EQ(back.bench[0].seed, 42u);
    EXPECT_EQ(back.bench[0].input_sets, 5);
    EXPECT_EQ(back.bench[0].flush_bytes, 1024u);
    EXPECT_EQ(back.bench[0].check_every, 4);
    EXPECT_EQ(back.bench[0].tail_checks, 7);
    EXPECT_EQ(back.bench[0].stop.min_samples, 12u);
    EXPECT_DOUBLE_EQ(back.bench[0].stop.max_time_s, 0.25);
    // Every setting of the stopping rule travels (the Python worker reads them from the job).
    EXPECT_EQ(text.at("bench").at(0).at("stop").at("plateau_window"), 16);
    EXPECT_EQ(back.bench[0].stop.plateau_window, 16u);
    EXPECT_DOUBLE_EQ(back.bench[0].stop.plateau_max_drift, 0.05);
    // So does the timer cross-check's floor, which both runners read from the job.
    EXPECT_EQ(text.at("bench").at(0).at("timer_min_windows"), 3);
    EXPECT_EQ(back.bench[0].timer_min_windows, 3);
    // And once more: the JSON of the parsed job is the JSON it came from.
    EXPECT_EQ(nlohmann::json(back), text);
}

TEST(JobTest, EarlyVerdictRoundTripsAndIsOffWhenAbsent) {
    job j = sample_ab_job();
    EXPECT_FALSE(nlohmann::json(j).at("bench").at(0).contains("early_verdict"));  // off: not written
    EXPECT_FALSE(nlohmann::json(j).get<job>().bench[0].early_verdict.enabled);
    j.bench[0].early_verdict = {true, 0.03, 0.9, 32, 8, 0.2};
    const job back = nlohmann::json(j).get<job>();
    const auto& e = back.bench[0].early_verdict;
    EXPECT_TRUE(e.enabled);
    EXPECT_DOUBLE_EQ(e.min_effect, 0.03);
    EXPECT_DOUBLE_EQ(e.confidence, 0.9);
    EXPECT_EQ(e.first_look, 32);
    EXPECT_EQ(e.max_looks, 8);
    EXPECT_DOUBLE_EQ(e.min_time_s, 0.2);
}

TEST(JobTest, AbJobWithoutBaseLibIsRejected) {
    nlohmann::json text = sample_ab_job();
    text.erase("base_lib");
    EXPECT_THROW((void)text.get<job>(), std::runtime_error);
    text["base_lib"] = "";
    EXPECT_THROW((void)text.get<job>(), std::runtime_error);
}

TEST(JobTest, OlderJobsWithoutBaseLibStillRead) {
    auto j = sample_ab_job();
    j.phase = job_phase::bench;
    nlohmann::json text = j;
    text.erase("base_lib");
    const job back = text.get<job>();
    EXPECT_EQ(back.phase, job_phase::bench);
    EXPECT_TRUE(back.base_lib.empty());
}

TEST(JobTest, UnknownPhaseIsRejected) {
    nlohmann::json text = sample_ab_job();
    text["phase"] = "interleaved";
    EXPECT_THROW((void)text.get<job>(), std::runtime_error);
}
