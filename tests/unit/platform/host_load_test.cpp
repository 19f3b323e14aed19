// Unit under test: platform/host_load — reading /proc/stat and /proc/<pid>/stat lines, the tally
// that decides a timing was busy (other work runnable in a quarter of the samples), and the
// sampler on this machine (it samples, and counts what it spawns as other work only when it is
// not its own child).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "platform/host_load.hpp"

namespace kp = kloop::platform;

TEST(HostLoadTest, ParsesProcsRunningAndStatLines) {
    EXPECT_EQ(kp::parse_procs_running("cpu  1 2 3\nctxt 99\nprocs_running 7\nprocs_blocked 0\n"), 7);
    EXPECT_EQ(kp::parse_procs_running("cpu 1\n"), -1);
    EXPECT_EQ(kp::parse_procs_running("procs_running x\n"), -1);
    char state = 0;
    int ppid = 0;
    // comm with spaces and parentheses: read after the last ')'.
    ASSERT_TRUE(kp::parse_stat_line("4242 (my (odd) name) R 17 4242 4242 0 -1", state, ppid));
    EXPECT_EQ(state, 'R');
    EXPECT_EQ(ppid, 17);
    EXPECT_FALSE(kp::parse_stat_line("garbage", state, ppid));
    EXPECT_FALSE(kp::parse_stat_line("", state, ppid));
}

TEST(HostLoadTest, BusyWhenOtherWorkRanInAQuarterOfTheSamples) {
    kp::host_load_tally quiet;
    for (int i = 0; i < 20; ++i) quiet.add(2, i == 5 ? 1 : 2);  // one daemon wake-up in 20
    EXPECT_EQ(quiet.report().samples, 20);
    EXPECT_EQ(quiet.report().busy_samples, 1);
    EXPECT_FALSE(quiet.report().busy());

    kp::host_load_tally busy;
    for (int i = 0; i < 20; ++i) busy.add(i % 4 == 0 ? 5 : 2, 2);  // 3 others in 5 of 20
    EXPECT_TRUE(busy.report().busy());
    EXPECT_EQ(busy.report().max_other, 3);
    EXPECT_NEAR(busy.report().mean_other, 15.0 / 20, 1e-12);
    EXPECT_NE(busy.report().describe().find("5 of 20 samples"), std::string::npos) << busy.report().describe();

    kp::host_load_tally unreadable;
    unreadable.add(-1, 1);  // /proc/stat unreadable: no sample
    EXPECT_EQ(unreadable.report().samples, 0);
    EXPECT_FALSE(unreadable.report().busy());
    // Our own threads never count as other work, even when the two reads disagree.
    kp::host_load_tally own;
    own.add(1, 3);
    EXPECT_EQ(own.report().max_other, 0);
}

TEST(HostLoadTest, TwoReportsCombineTheirSamples) {
    kp::host_load_tally quiet, busy;
    for (int i = 0; i < 30; ++i) quiet.add(2, 2);
    for (int i = 0; i < 10; ++i) busy.add(4, 2);  // 2 others in every sample
    const auto both = kp::combined(quiet.report(), busy.report());
    EXPECT_EQ(both.samples, 40);
    EXPECT_EQ(both.busy_samples, 10);
    EXPECT_EQ(both.max_other, 2);
    EXPECT_NEAR(both.mean_other, 20.0 / 40, 1e-12);
    EXPECT_TRUE(both.busy());  // a quarter of all samples
    EXPECT_FALSE(kp::combined(quiet.report(), kp::host_load_report{}).busy());
    EXPECT_EQ(kp::combined({}, {}).samples, 0);
}

TEST(HostLoadTest, TheSamplerSamplesThisMachine) {
    kp::host_load_sampler sampler(0.01);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto r = sampler.stop();
    EXPECT_GE(r.samples, 2);  // /proc is there on every machine these tests run on
    EXPECT_GE(r.max_other, 0);
    EXPECT_EQ(sampler.stop().samples, r.samples);  // a second stop returns the same report
}
