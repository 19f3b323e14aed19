// Unit under test: platform/background_process — a helper kloop starts beside itself: it runs
// in its own group, gets the descriptor handed over as fd 3, writes its log, ends when its stdin
// closes, and is killed (with its group) when it does not end within the grace period.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "platform/background_process.hpp"
#include "platform/file_io.hpp"
#include "support/process_probe.hpp"

namespace kp = kloop::platform;
using kloop::testing::process_is_dead;
using kloop::testing::read_all;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(BackgroundProcessTest, EndsWhenItsStdinCloses) {
    kp::scoped_temp_dir dir("kloop-bg-test");
    kp::background_request r;
    r.argv = {"sh", "-c", "echo started; cat > /dev/null; echo saw-eof"};
    r.log_file = dir.path() / "log";
    kp::background_process p(r);
    ASSERT_TRUE(p.started()) << p.spawn_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(p.running());  // waits on stdin, which kloop holds open
    EXPECT_EQ(::getpgid(p.pid()), p.pid());  // leads its own group
    const auto t0 = std::chrono::steady_clock::now();
    p.stop(5.0);
    EXPECT_LT(seconds_since(t0), 4.0);  // it ended on EOF, not by the kill after the grace
    EXPECT_FALSE(p.running());
    EXPECT_EQ(read_all(dir.path() / "log"), "started\nsaw-eof\n");
}

TEST(BackgroundProcessTest, OneThatIgnoresEofIsKilledWithItsGroupAfterTheGrace) {
    kp::scoped_temp_dir dir("kloop-bg-test");
    kp::background_request r;
    r.argv = {"sh", "-c", "sleep 30 & echo $! > " + (dir.path() / "child").string() + "; wait"};
    kp::background_process p(r);
    ASSERT_TRUE(p.started());
    for (int i = 0; i < 100 && read_all(dir.path() / "child").empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const pid_t grandchild = std::stoi(read_all(dir.path() / "child"));
    const auto t0 = std::chrono::steady_clock::now();
    p.stop(0.3);
    EXPECT_GE(seconds_since(t0), 0.25);
    EXPECT_FALSE(p.running());
    for (int i = 0; i < 100 && !process_is_dead(grandchild); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(process_is_dead(grandchild)) << "the helper's own child outlived it";
}

TEST(BackgroundProcessTest, HandsOverADescriptorAsFd3AndNoOther) {
    kp::scoped_temp_dir dir("kloop-bg-test");
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    ASSERT_EQ(::write(fds[1], "through fd 3", 12), 12);
    ::close(fds[1]);
    kp::background_request r;
    r.argv = {"sh", "-c", "cat <&3; ls /proc/self/fd | wc -l"};
    r.log_file = dir.path() / "log";
    r.fd3 = fds[0];
    kp::background_process p(r);
    ::close(fds[0]);
    ASSERT_TRUE(p.started());
    p.stop(5.0);
    // fds 0-3 of the shell plus the one ls opens to list them: nothing else leaked in
    EXPECT_EQ(read_all(dir.path() / "log"), "through fd 35\n");
}

TEST(BackgroundProcessTest, AProgramThatDoesNotExistIsReportedNotThrown) {
    kp::background_request r;
    r.argv = {"/nonexistent/kloop-helper"};
    kp::background_process p(r);
    EXPECT_FALSE(p.started());
    EXPECT_NE(p.spawn_error().find("could not start '/nonexistent/kloop-helper'"), std::string::npos) << p.spawn_error();
    EXPECT_FALSE(p.running());
    p.stop();  // harmless
}
