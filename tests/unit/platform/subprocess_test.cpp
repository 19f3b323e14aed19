// Unit under test: platform/subprocess — posix_command_runner with real, trivial commands
// (as ninja's src/subprocess_test.cc does): exit codes, signals, timeouts that kill the whole
// process group, spawn failures, capture caps, output files, cwd, environment, interruption.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "support/process_probe.hpp"

namespace kp = kloop::platform;
using kloop::testing::process_is_dead;

namespace {

kp::process_result run(std::vector<std::string> argv, double timeout_s = 0) {
    kp::posix_command_runner runner;
    kp::process_request r;
    r.argv = std::move(argv);
    r.timeout_s = timeout_s;
    return runner.run(r);
}

}  // namespace

TEST(SubprocessTest, TrueSucceeds) {
    auto r = run({"true"});
    EXPECT_TRUE(r.started);
    EXPECT_TRUE(r.succeeded());
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.term_signal, 0);
    EXPECT_FALSE(r.timed_out);
    EXPECT_GE(r.wall_s, 0.0);
    EXPECT_EQ(r.describe(), "exited with 0");
}

TEST(SubprocessTest, ExitCodeIsDecoded) {
    auto r = run({"sh", "-c", "exit 3"});
    EXPECT_TRUE(r.started);
    EXPECT_FALSE(r.succeeded());
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.describe(), "exited with 3");
}

TEST(SubprocessTest, SignalIsNamed) {
    auto r = run({"sh", "-c", "kill -SEGV $$"});
    EXPECT_TRUE(r.started);
    EXPECT_FALSE(r.succeeded());
    EXPECT_EQ(r.term_signal, SIGSEGV);
    EXPECT_EQ(r.describe(), "killed by SIGSEGV (signal 11)");
}

TEST(SubprocessTest, SignalNames) {
    EXPECT_EQ(kp::signal_name(SIGABRT), "SIGABRT");
    EXPECT_EQ(kp::signal_name(SIGKILL), "SIGKILL");
    EXPECT_EQ(kp::signal_name(1000), "signal 1000");
}

TEST(SubprocessTest, TimeoutKillsPromptly) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = run({"sleep", "10"}, 0.3);
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.started);
    EXPECT_TRUE(r.timed_out);
    EXPECT_FALSE(r.succeeded());
    EXPECT_LT(r.wall_s, 3.0);
    EXPECT_LT(elapsed, 3.0);
    EXPECT_GE(r.wall_s, 0.25);
    EXPECT_EQ(r.describe(), "timed out after 0.3 s");
}

TEST(SubprocessTest, TimeoutKillsTheWholeProcessGroup) {
    // The shell prints its background child's pid, then waits on a second sleep.
    auto r = run({"sh", "-c", "sleep 30 & echo $!; sleep 30"}, 0.5);
    ASSERT_TRUE(r.timed_out);
    EXPECT_LT(r.wall_s, 3.0);
    pid_t grandchild = static_cast<pid_t>(std::stol(r.stdout_text));
    ASSERT_GT(grandchild, 0);
    // Once orphaned it is reaped by init (or lingers as a zombie); give that a moment.
    bool dead = false;
    for (int i = 0; i < 100 && !dead; ++i) {
        dead = process_is_dead(grandchild);
        if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(dead) << "grandchild " << grandchild << " survived the timeout";
}

TEST(SubprocessTest, TermIgnoringChildIsKilledAfterGrace) {
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"};
    req.timeout_s = 0.3;
    req.kill_grace_s = 0.3;
    auto r = runner.run(req);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.term_signal, SIGKILL);
    EXPECT_LT(r.wall_s, 3.0);
}

TEST(SubprocessTest, BackgroundStragglerDoesNotHangTheRun) {
    // The leader exits at once, but its background child holds stdout open for 30 s.
    auto t0 = std::chrono::steady_clock::now();
    auto r = run({"sh", "-c", "sleep 30 & echo done"});
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, "done\n");
    EXPECT_LT(elapsed, 5.0);
}

TEST(SubprocessTest, MissingCommandDoesNotStart) {
    auto r = run({"kloop-no-such-command-xyz"});
    EXPECT_FALSE(r.started);
    EXPECT_FALSE(r.succeeded());
    EXPECT_EQ(r.spawn_error, "could not start 'kloop-no-such-command-xyz': No such file or directory");
    EXPECT_EQ(r.describe(), r.spawn_error);
}

TEST(SubprocessTest, MissingWorkingDirectoryDoesNotStart) {
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"true"};
    req.cwd = "/nonexistent/kloop/dir";
    auto r = runner.run(req);
    EXPECT_FALSE(r.started);
    EXPECT_NE(r.spawn_error.find("/nonexistent/kloop/dir"), std::string::npos) << r.spawn_error;
}

TEST(SubprocessTest, CapturesBothStreams) {
    auto r = run({"sh", "-c", "echo out; echo err >&2"});
    EXPECT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, "out\n");
    EXPECT_EQ(r.stderr_text, "err\n");
    EXPECT_FALSE(r.stdout_truncated);
}

TEST(SubprocessTest, CaptureIsTruncatedAtTheCap) {
    kp::posix_command_runner runner;
    kp::process_request req;
    // 1 MB on each stream; the child must not block even though we keep only 1000 bytes.
    req.argv = {"sh", "-c", "head -c 1000000 /dev/zero; head -c 1000000 /dev/zero >&2"};
    req.max_capture_bytes = 1000;
    req.timeout_s = 20;
    auto r = runner.run(req);
    EXPECT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(r.stdout_text.size(), 1000u);
    EXPECT_EQ(r.stderr_text.size(), 1000u);
    EXPECT_TRUE(r.stdout_truncated);
    EXPECT_TRUE(r.stderr_truncated);
}

TEST(SubprocessTest, StdoutFileIsWritten) {
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"sh", "-c", "echo to-file; echo to-pipe >&2"};
    req.stdout_file = dir.path() / "logs" / "out.txt";  // parent created on demand
    auto r = runner.run(req);
    EXPECT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, "");
    EXPECT_EQ(r.stderr_text, "to-pipe\n");
    EXPECT_EQ(kp::read_file(req.stdout_file), "to-file\n");
}

TEST(SubprocessTest, StdinIsDevNull) {
    auto r = run({"sh", "-c", "cat; echo end"}, 10);
    EXPECT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, "end\n");
}

TEST(SubprocessTest, CwdIsHonoured) {
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"pwd", "-P"};
    req.cwd = dir.path();
    auto r = runner.run(req);
    ASSERT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, std::filesystem::canonical(dir.path()).string() + "\n");
}

TEST(SubprocessTest, EnvOverrideIsVisible) {
    ::setenv("KLOOP_SUBPROCESS_TEST_VAR", "parent", 1);
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"sh", "-c", "echo \"$KLOOP_SUBPROCESS_TEST_VAR/$KLOOP_SUBPROCESS_TEST_NEW\""};
    req.env_overrides = {{"KLOOP_SUBPROCESS_TEST_VAR", "child"}, {"KLOOP_SUBPROCESS_TEST_NEW", "x"}};
    auto r = runner.run(req);
    ::unsetenv("KLOOP_SUBPROCESS_TEST_VAR");
    ASSERT_TRUE(r.succeeded());
    EXPECT_EQ(r.stdout_text, "child/x\n");
}

TEST(SubprocessTest, NoDescriptorLeaksIntoTheChild) {
    // Only 0, 1, 2 (and the fd ls itself opens for the directory) may be open in the child.
    auto r = run({"sh", "-c", "ls /proc/self/fd | wc -l"});
    ASSERT_TRUE(r.succeeded());
    EXPECT_LE(std::stoi(r.stdout_text), 4) << "child saw fds:" << r.stdout_text;
}

TEST(SubprocessTest, ChildLeadsItsOwnProcessGroup) {
    auto r = run({"sh", "-c", "ps -o pgid= -p $$; echo $$"});
    if (!r.succeeded()) GTEST_SKIP() << "ps unavailable: " << r.describe();
    std::istringstream in(r.stdout_text);
    long pgid = 0, pid = 0;
    in >> pgid >> pid;
    EXPECT_EQ(pgid, pid);
    EXPECT_NE(pgid, static_cast<long>(::getpgrp()));
}

TEST(SubprocessTest, InterruptKillsTheChild) {
    kp::install_interrupt_handler();
    kp::clear_interrupt_request();
    std::thread raiser([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ::kill(::getpid(), SIGINT);
    });
    auto r = run({"sleep", "10"});
    raiser.join();
    EXPECT_TRUE(kp::interrupt_requested());
    EXPECT_TRUE(r.started);
    EXPECT_TRUE(r.interrupted);
    EXPECT_FALSE(r.succeeded());
    EXPECT_LT(r.wall_s, 3.0);
    EXPECT_EQ(r.describe(), "interrupted");
    // With the flag still set, nothing new is started.
    auto r2 = run({"true"});
    EXPECT_FALSE(r2.started);
    EXPECT_TRUE(r2.interrupted);
    kp::clear_interrupt_request();
    EXPECT_TRUE(run({"true"}).succeeded());
}

TEST(SubprocessTest, ChildDiesWithTheProcessThatStartedIt) {
    // A helper process runs a command through the runner and is SIGKILLed: the command must not
    // outlive it (PR_SET_PDEATHSIG), although it would sleep for a minute.
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    const auto pid_file = dir.path() / "pid";
    const pid_t helper = ::fork();
    ASSERT_GE(helper, 0);
    if (helper == 0) {
        kp::posix_command_runner runner;
        kp::process_request req;
        req.argv = {"sh", "-c", "echo $$ > '" + pid_file.string() + ".tmp' && mv '" + pid_file.string() + ".tmp' '" +
                                    pid_file.string() + "' && exec sleep 60"};
        (void)runner.run(req);
        ::_exit(0);
    }
    pid_t child = 0;
    for (int i = 0; i < 3000 && child == 0; ++i) {  // up to 30 s on a busy machine
        if (std::filesystem::exists(pid_file)) child = std::stoi(kp::read_file(pid_file));
        else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(child, 0) << "the command never started";
    ASSERT_FALSE(process_is_dead(child));
    ::kill(helper, SIGKILL);
    int status = 0;
    ::waitpid(helper, &status, 0);
    bool dead = false;
    for (int i = 0; i < 2000 && !dead; ++i) {  // up to 20 s
        dead = process_is_dead(child);
        if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(dead) << "pid " << child << " outlived the process that started it";
    if (!dead) ::kill(child, SIGKILL);
}

TEST(SubprocessTest, RelayedFilesAreCappedKeepTheirTailAndStayApart) {
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    kp::posix_command_runner runner;
    kp::process_request req;
    // 8 MB on stdout, then a last line; a short line on stderr.
    req.argv = {"sh", "-c", "echo to-stderr >&2; head -c 8000000 /dev/zero | tr '\\0' x; echo; echo LAST-LINE"};
    req.stdout_file = dir.path() / "out.log";
    req.stderr_file = dir.path() / "err.log";
    req.max_file_bytes = 100000;
    auto r = runner.run(req);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const auto out = kp::read_file(req.stdout_file);
    EXPECT_LE(out.size(), 100000u + 200u);
    EXPECT_EQ(out.substr(0, 5), "xxxxx");
    EXPECT_NE(out.find("more bytes were dropped"), std::string::npos);
    EXPECT_TRUE(r.stdout_truncated);
    EXPECT_LE(r.stdout_tail.size(), kp::file_tail_bytes);
    EXPECT_TRUE(r.stdout_tail.ends_with("LAST-LINE\n")) << r.stdout_tail.substr(r.stdout_tail.size() - 20);
    EXPECT_EQ(kp::read_file(req.stderr_file), "to-stderr\n");
    EXPECT_EQ(r.stderr_tail, "to-stderr\n");
    EXPECT_FALSE(r.stderr_truncated);
}

TEST(SubprocessTest, AnEnormousTimeoutIsNoTimeoutAtAll) {
    // 1e10 s does not fit the clock as nanoseconds: it must not expire at once.
    auto r = run({"sh", "-c", "sleep 0.2; echo done"}, 1e10);
    EXPECT_TRUE(r.succeeded()) << r.describe();
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.stdout_text, "done\n");
}

TEST(SubprocessTest, CpuLimitEndsTheChildAndWhatItLeftBehind) {
    // The child starts a spinning grandchild in the background and exits at once: the grandchild
    // is an orphan no death signal reaches, and only the inherited CPU limit ends it.
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    const auto pid_file = dir.path() / "pid";
    kp::posix_command_runner runner;
    kp::process_request req;
    req.argv = {"sh", "-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $! > '" +
                                pid_file.string() + "'"};
    req.cpu_limit_s = 1;
    req.timeout_s = 60;
    ASSERT_TRUE(runner.run(req).succeeded());
    const pid_t orphan = std::stoi(kp::read_file(pid_file));
    bool dead = false;
    for (int i = 0; i < 6000 && !dead; ++i) {  // 1 s of CPU; up to 60 s of wall on a busy machine
        dead = process_is_dead(orphan);
        if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(dead) << "pid " << orphan << " outlived its CPU limit";
    if (!dead) ::kill(orphan, SIGKILL);

    // A spinning child itself is ended by SIGXCPU, long before its wall timeout.
    req.argv = {"sh", "-c", "while :; do :; done"};
    const auto r = runner.run(req);
    EXPECT_FALSE(r.timed_out);
    EXPECT_TRUE(r.term_signal == SIGXCPU || r.term_signal == SIGKILL) << r.describe();
}

namespace {

// Starts a stand-in for kloop that runs `sh` (which leaves a `sleep` behind in its group) with
// or without the group guard, SIGKILLs the stand-in once the sleep runs, and returns the sleep's
// pid.
pid_t orphan_of_a_killed_caller(bool guard, const std::filesystem::path& pid_file) {
    const pid_t caller = ::fork();
    if (caller == 0) {
        kp::posix_command_runner runner;
        kp::process_request req;
        req.argv = {"sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $! > '" + pid_file.string() + "'; wait"};
        req.guard_group = guard;
        req.timeout_s = 120;
        (void)runner.run(req);
        ::_exit(0);
    }
    std::string text;
    for (int i = 0; i < 3000 && text.find('\n') == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::error_code ec;
        if (std::filesystem::exists(pid_file, ec)) text = kp::read_file(pid_file);
    }
    ::kill(caller, SIGKILL);
    ::waitpid(caller, nullptr, 0);
    return text.empty() ? -1 : std::stoi(text);
}

bool dies_within(pid_t pid, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (process_is_dead(pid)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return process_is_dead(pid);
}

}  // namespace

TEST(SubprocessTest, AGuardedChildTakesWhatItStartedAlongWhenItsCallerDies) {
    kp::scoped_temp_dir dir("kloop-subprocess-test");
    // Unguarded, the death signal reaches only the child: what it started lives on.
    const pid_t loose = orphan_of_a_killed_caller(false, dir.path() / "loose");
    ASSERT_GT(loose, 0);
    EXPECT_FALSE(dies_within(loose, std::chrono::milliseconds(500))) << "the control case: nothing should end it";
    ::kill(loose, SIGKILL);
    // Guarded, the guard kills the child's whole group.
    const pid_t guarded = orphan_of_a_killed_caller(true, dir.path() / "guarded");
    ASSERT_GT(guarded, 0);
    EXPECT_TRUE(dies_within(guarded, std::chrono::seconds(10))) << "pid " << guarded << " outlived its caller";
    if (!process_is_dead(guarded)) ::kill(guarded, SIGKILL);
}

TEST(SubprocessTest, AGuardedChildsOutputAndEndAreItsOwn) {
    kp::posix_command_runner runner;
    kp::process_request req;
    req.guard_group = true;
    req.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
    auto r = runner.run(req);
    EXPECT_EQ(r.exit_code, 3) << r.describe();
    EXPECT_EQ(r.stdout_text, "out\n");
    EXPECT_EQ(r.stderr_text, "err\n");
    req.argv = {"sh", "-c", "kill -USR1 $$"};
    r = runner.run(req);
    EXPECT_EQ(r.term_signal, SIGUSR1) << r.describe();
    req.argv = {"/nonexistent/kloop-no-such-program"};
    r = runner.run(req);
    EXPECT_FALSE(r.started) << r.describe();
    req.argv = {"sh", "-c", "sleep 30"};
    req.timeout_s = 0.5;
    r = runner.run(req);
    EXPECT_TRUE(r.timed_out) << r.describe();
}
