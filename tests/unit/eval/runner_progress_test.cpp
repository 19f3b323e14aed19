// Tests of eval/runner_progress: a runner's events as progress updates, followed while it runs.
#include "eval/runner_progress.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/file_io.hpp"

namespace {

namespace rn = kloop::runner;
using kloop::eval::progress_of_event;
using kloop::eval::progress_update;

rn::job gate_job() {
    rn::job j;
    j.phase = rn::job_phase::gate;
    rn::call_plan a, b;
    a.mode = "fwd", a.shape = "small";
    b.mode = "bwd", b.shape = "large";
    j.calls = {a, b};
    j.gate = {{10, 0, 0, 1}, {11, 0, 1, 2}, {12, 1, 2, 3}};
    return j;
}

rn::job ab_job() {
    rn::job j;
    j.phase = rn::job_phase::ab;
    rn::call_plan a;
    a.mode = "fwd", a.shape = "4096x4096";
    j.calls = {a};
    rn::bench_item item;
    item.id = 7;
    j.bench = {item};
    return j;
}

TEST(RunnerProgressTest, AGateCaseIsNamedByItsCallAndTrialAndCounted) {
    const auto u = progress_of_event(gate_job(), rn::item_start_event{rn::event_kind::case_start, 12});
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->step, "gate");
    EXPECT_EQ(u->subject, "bwd/large trial 3");
    EXPECT_EQ(u->index, 3);
    EXPECT_EQ(u->count, 3);
    EXPECT_FALSE(u->finished);
    const auto done = progress_of_event(gate_job(), rn::case_result_event{11, {{"return_code", 0}}});
    ASSERT_TRUE(done.has_value());
    EXPECT_TRUE(done->finished);
    EXPECT_EQ(done->subject, "fwd/small trial 2");
}

TEST(RunnerProgressTest, ATimedItemCarriesTheStoppingRulesState) {
    const auto u = progress_of_event(ab_job(), rn::progress_event{7, 40, 0.8, 0.012, 0.005});
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->step, "A/B");
    EXPECT_EQ(u->subject, "fwd/4096x4096");
    EXPECT_EQ(u->samples, 40);
    EXPECT_DOUBLE_EQ(*u->timed_s, 0.8);
    EXPECT_DOUBLE_EQ(*u->rel_stdev, 0.012);
    EXPECT_DOUBLE_EQ(*u->target_rel_stdev, 0.005);
    rn::ab_result_event r;
    r.id = 7;
    r.base_samples_s = {1, 2, 3};
    r.candidate_samples_s = {1, 2};
    const auto done = progress_of_event(ab_job(), r);
    ASSERT_TRUE(done.has_value());
    EXPECT_TRUE(done->finished);
    EXPECT_EQ(done->state, "done");
    EXPECT_EQ(done->samples, 2);
    r.failure = rn::call_failure{"sample", 1, 3, {}, {}, "candidate"};
    EXPECT_EQ(progress_of_event(ab_job(), r)->state, "failed");
}

TEST(RunnerProgressTest, NoTextOfTheRunnersChoiceReachesTheDisplay) {
    // A stage word the runners do not write (here a terminal escape) is shown as "running".
    const auto u = progress_of_event(gate_job(), rn::stage_event{10, "\033]0;pwned\007"});
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->state, "running");
    EXPECT_EQ(progress_of_event(gate_job(), rn::stage_event{10, "determinism"})->state, "determinism");
    // Ids the job does not have, and events of no item, are not shown.
    EXPECT_FALSE(progress_of_event(gate_job(), rn::item_start_event{rn::event_kind::case_start, 99}).has_value());
    EXPECT_FALSE(progress_of_event(gate_job(), rn::done_event{}).has_value());
    EXPECT_FALSE(progress_of_event(gate_job(), rn::start_event{}).has_value());
}

class recording_sink final : public kloop::eval::progress_sink {
public:
    std::vector<progress_update> seen() {
        std::lock_guard lock(m_mutex);
        return m_seen;
    }
    bool wait_for(std::size_t n, std::chrono::seconds limit) {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_for(lock, limit, [&] { return m_seen.size() >= n; });
    }

protected:
    void do_update(const progress_update& u) override {
        std::lock_guard lock(m_mutex);
        m_seen.push_back(u);
        m_cv.notify_all();
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<progress_update> m_seen;
};

TEST(RunnerProgressTest, TheFollowerShowsEachLineWhileTheFileGrows) {
    kloop::platform::scoped_temp_dir dir("kloop-progress-test");
    const auto path = dir.path() / "gate_events.jsonl";
    const auto job = gate_job();
    recording_sink sink;
    kloop::eval::runner_follower follower(path, job, &sink);  // before the file exists, as with a runner

    std::ofstream out(path, std::ios::binary);
    out << R"({"event":"start","pid":1,"abi":1,"schema_version":1,"phase":"gate"})" << "\n"
        << R"({"event":"case_start","id":10})" << "\n"
        << std::flush;
    // Seen while the "runner" is still writing: nothing more comes until it is.
    ASSERT_TRUE(sink.wait_for(1, std::chrono::seconds(20)));
    EXPECT_EQ(sink.seen().at(0).subject, "fwd/small trial 1");

    // A line written in two pieces is read once it is whole; garbage is skipped.
    out << R"({"event":"stage","id":10,)" << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(sink.seen().size(), 1u);
    out << R"("stage":"candidate"})" << "\n" << "not json\n" << R"({"event":"nonsense","id":10})" << "\n"
        << R"({"event":"case_result","id":10,"return_code":0})" << "\n" << std::flush;
    follower.stop();
    const auto seen = sink.seen();
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[1].state, "candidate");
    EXPECT_TRUE(seen[2].finished);
}

}  // namespace
