// Unit under test: eval::timer_cross_check over a bench session's events — the calibration a
// series is held to is the host's, or the runner's calibration host's live overheads where the
// machine's load made them larger.
#include <gtest/gtest.h>

#include <vector>

#include <nlohmann/json.hpp>

#include "eval/isolation_checks.hpp"
#include "unit/runner/event_lines.hpp"

using nlohmann::json;

namespace {

kloop::runner::job one_item_job() {
    kloop::runner::job j;
    kloop::runner::call_plan p;
    p.mode = "fwd";
    p.shape = "n4096";
    j.calls.push_back(p);
    kloop::runner::bench_item b;
    b.id = 7;
    b.call = 0;
    j.bench.push_back(b);
    return j;
}

// A start event whose host calibrated 30 µs median, 36 µs p90 overhead on an idle machine, and a
// bench result of 40 calls of 2 ms each claimed as `claimed` seconds, every window `extra`
// seconds longer than the call, and the calibration host's overhead `live` (none when 0) after
// every 4th call.
std::vector<kloop::runner::event> session(double claimed, double extra, double live) {
    const json start = kloop::testing::start_line({
                        {"candidate_device",
                         {{"isolation",
                           {{"process", "separate"},
                            {"confined", true},
                            {"hosts", json::array({{{"timer_calibration",
                                                     {{"overhead_median_s", 30e-6}, {"overhead_p90_s", 36e-6}}}}})}}}}}});
    json samples = json::array(), info = json::array();
    for (int i = 0; i < 40; ++i) {
        samples.push_back(claimed);
        json one = {{"window_s", 2e-3 + extra + 1e-6 * (i % 5)}};
        if (live > 0 && i % 4 == 3) one["calibration_overhead_s"] = live + 1e-6 * (i % 3);
        info.push_back(one);
    }
    const json result = kloop::testing::bench_result_line(7, {{"samples_s", samples}, {"sample_info", info}});
    return kloop::testing::typed({start, result});
}

}  // namespace

TEST(IsolationChecksTest, AnHonestTimerOnAnIdleMachinePasses) {
    const auto c = kloop::eval::timer_cross_check(one_item_job(), session(2e-3, 35e-6, 0));
    EXPECT_EQ(c.status, kloop::eval::check_status::pass) << c.detail;
}

TEST(IsolationChecksTest, LoadAfterTheCalibrationFailsAnHonestTimerWithoutTheCalibrationHost) {
    // Every window 600 µs longer than its call: the machine got busy after the host calibrated.
    const auto c = kloop::eval::timer_cross_check(one_item_job(), session(2e-3, 600e-6, 0));
    EXPECT_EQ(c.status, kloop::eval::check_status::fail) << c.detail;
}

TEST(IsolationChecksTest, TheCalibrationHostsLiveOverheadsFollowTheLoad) {
    const auto c = kloop::eval::timer_cross_check(one_item_job(), session(2e-3, 600e-6, 590e-6));
    EXPECT_EQ(c.status, kloop::eval::check_status::pass) << c.detail;
}

TEST(IsolationChecksTest, AForgedTimerStillFailsUnderTheLiveOverheads) {
    // Half of each 2 ms call hidden: the gap is 1.6 ms against an allowance near 0.8 ms.
    const auto c = kloop::eval::timer_cross_check(one_item_job(), session(1e-3, 600e-6, 590e-6));
    EXPECT_EQ(c.status, kloop::eval::check_status::fail) << c.detail;
}
