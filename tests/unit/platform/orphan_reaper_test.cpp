// Unit under test: platform/orphan_reaper — what a program leaves running when it ends (a
// process in its group with its output redirected, which the runner's straggler kill does not
// reach, and one that left the group with setsid) is adopted and killed by reap(), which names
// them; a child this process had before the reaper was made is left alone.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "platform/file_io.hpp"
#include "platform/orphan_reaper.hpp"
#include "platform/subprocess.hpp"

using namespace kloop::platform;

namespace {

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST(OrphanReaperTest, WhatAProgramLeftRunningIsKilledAndNamedAndEarlierChildrenAreLeftAlone) {
    // A child from before the reaper: not the reaper's to kill.
    const pid_t earlier = ::fork();
    ASSERT_GE(earlier, 0);
    if (earlier == 0) {
        ::pause();
        ::_exit(0);
    }
    scoped_temp_dir dir("kloop-orphan-test");
    std::vector<adopted_process> killed;
    pid_t in_group = 0, escaped = 0;
    {
        orphan_reaper reaper;
        posix_command_runner runner;
        process_request r;
        r.argv = {"bash", "-c",
                  "sleep 1001 </dev/null >/dev/null 2>&1 & echo $! > '" + (dir.path() / "in_group").string() +
                      "'; setsid sleep 1002 </dev/null >/dev/null 2>&1 & echo $! > '" + (dir.path() / "escaped").string() +
                      "'; exit 0"};
        r.timeout_s = 30;
        const auto res = runner.run(r);
        ASSERT_TRUE(res.succeeded()) << res.describe();
        in_group = std::stoi(read_file(dir.path() / "in_group"));
        escaped = std::stoi(read_file(dir.path() / "escaped"));
        // Both outlived the program; both are now this process's children.
        ASSERT_TRUE(alive(in_group));
        ASSERT_TRUE(alive(escaped));
        const auto children = child_processes();
        EXPECT_TRUE(children.count(in_group)) << in_group;
        EXPECT_TRUE(children.count(escaped)) << escaped;
        killed = reaper.reap();
    }
    ASSERT_EQ(killed.size(), 2u);
    for (pid_t pid : {in_group, escaped}) {
        const auto it = std::find_if(killed.begin(), killed.end(), [&](const adopted_process& p) { return p.pid == pid; });
        ASSERT_NE(it, killed.end()) << pid;
        EXPECT_EQ(it->command, pid == in_group ? "sleep 1001" : "sleep 1002");
        EXPECT_FALSE(alive(pid)) << pid << " outlived reap()";  // killed and reaped: no zombie either
    }
    EXPECT_TRUE(alive(earlier));
    ::kill(earlier, SIGKILL);
    int status = 0;
    EXPECT_EQ(::waitpid(earlier, &status, 0), earlier);
}

TEST(OrphanReaperTest, NothingLeftRunningKillsNothing) {
    orphan_reaper reaper;
    posix_command_runner runner;
    process_request r;
    r.argv = {"bash", "-c", "true"};
    ASSERT_TRUE(runner.run(r).succeeded());
    EXPECT_TRUE(reaper.reap().empty());
}
