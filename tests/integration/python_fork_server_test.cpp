// Unit under test: backend/python/fork_server — a worker request routed through the fork server
// runs in a child of the warm server (not a fresh interpreter of kloop's), yet ends for kloop
// exactly as the worker did: exit status, crash signal, timeout (which takes the worker down);
// KLOOP_PYTHON_FORK_SERVER=0 starts a fresh interpreter; stop_fork_servers() ends the servers.
// Runs the real worker's build probe (numpy only) on small sources whose import does the test's
// bidding; needs the interpreter of cmake/KloopPython.cmake (else skipped).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <thread>
#include <unistd.h>

#include "backend/python/fork_server.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "support/process_probe.hpp"
#include "support/scoped_env.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;
namespace kpy = kloop::backend::python;
using kloop::testing::process_is_dead;
using kloop::testing::read_all;

namespace {

const fs::path worker_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "python";

bool eventually(const std::function<bool()>& cond) {
    for (int i = 0; i < 250 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return cond();
}

class ForkServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(KLOOP_TEST_PYTHON).empty()) GTEST_SKIP() << "no Python interpreter with numpy";
    }
    // A probe request of the worker for a source whose import runs `body` (it may use `here`, the
    // test's directory); routed through the fork server unless told otherwise.
    kp::process_result probe(const std::string& body, double timeout_s = 60, bool route = true) {
        const fs::path src = dir.path() / ("cand_" + std::to_string(++m_sources) + ".py");
        kp::write_file_atomic(src, "import os, signal, sys, time\nhere = os.path.dirname(os.path.abspath(__file__))\n" + body + "\n");
        kp::process_request q;
        q.argv = {KLOOP_TEST_PYTHON, "-m", "kloop_worker", "--probe", "--source", src.string(), "--snapshot", src.string(),
                  "--module", "kloop_fork_test", "--device", "cpu", "--role", "reference", "--out",
                  (dir.path() / "facts.json").string()};
        q.env_overrides = {{"PYTHONPATH", worker_dir.string()}, {"PYTHONDONTWRITEBYTECODE", "1"},
                           {"TRITON_CACHE_DIR", (dir.path() / "triton").string()}};
        q.cwd = dir.path();
        q.timeout_s = timeout_s;
        q.kill_grace_s = 0.5;
        if (route) kpy::route_through_fork_server(q, worker_dir, false);
        kp::posix_command_runner runner;
        return runner.run(q);
    }
    kp::scoped_temp_dir dir{"kloop-fork-server-test"};

private:
    int m_sources = 0;
};

const char* record_parent = "open(os.path.join(here, 'parent'), 'w').write(str(os.getppid()))";

}  // namespace

TEST_F(ForkServerTest, TheWorkerIsAChildOfTheServerNotOfKloop) {
    const auto r = probe(record_parent);
    ASSERT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
    const pid_t parent = std::stoi(read_all(dir.path() / "parent"));
    EXPECT_NE(parent, ::getpid());
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "facts.json"));  // the probe did its work
    EXPECT_NE(read_all(dir.path() / "facts.json").find("\"tensors\": \"numpy\""), std::string::npos);
}

TEST_F(ForkServerTest, SwitchedOffTheWorkerIsAFreshInterpreterOfKloops) {
    kloop::testing::scoped_env off("KLOOP_PYTHON_FORK_SERVER", "0");
    const auto r = probe(record_parent);
    ASSERT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
    EXPECT_EQ(std::stoi(read_all(dir.path() / "parent")), ::getpid());
}

TEST_F(ForkServerTest, ExitCodeAndCrashSignalAreTheWorkers) {
    const auto exited = probe("os._exit(7)");
    EXPECT_EQ(exited.exit_code, 7) << exited.describe();
    const auto crashed = probe("os.kill(os.getpid(), signal.SIGSEGV)");
    EXPECT_EQ(crashed.term_signal, SIGSEGV) << crashed.describe();
    EXPECT_EQ(crashed.describe(), "killed by SIGSEGV (signal 11)");
}

TEST_F(ForkServerTest, ATimeoutTakesTheWorkerDown) {
    const auto r = probe("open(os.path.join(here, 'pid'), 'w').write(str(os.getpid())); time.sleep(60)", 1.5);
    EXPECT_TRUE(r.timed_out) << r.describe();
    EXPECT_LT(r.wall_s, 10.0);
    const pid_t worker = std::stoi(read_all(dir.path() / "pid"));
    EXPECT_TRUE(eventually([&] { return process_is_dead(worker); })) << "the worker outlived kloop's timeout";
}

TEST_F(ForkServerTest, StoppingEndsTheServerAndTheNextRequestStartsANewOne) {
    ASSERT_TRUE(probe(record_parent).succeeded());
    const pid_t server = std::stoi(read_all(dir.path() / "parent"));
    ASSERT_NE(server, ::getpid());
    kpy::stop_fork_servers();
    EXPECT_TRUE(eventually([&] { return process_is_dead(server); }));
    ASSERT_TRUE(probe(record_parent).succeeded());
    const pid_t next = std::stoi(read_all(dir.path() / "parent"));
    EXPECT_NE(next, server);
    EXPECT_NE(next, ::getpid());
}
