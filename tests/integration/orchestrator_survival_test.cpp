// Unit under test: kloop surviving what a candidate or a second kloop does to it, end to end
// through the real binaries on the CPU example:
//   - a SIGKILLed kloop takes its runner and candidate host down (they die with it), and the
//     next command removes the scratch directory it left;
//   - a kloop that dies while its candidate runs (a confined candidate cannot kill it: the
//     exploit corpus) leaves that candidate recorded as rejected by the next command, and the
//     loop goes on;
//   - a candidate that prints without end leaves kloop's memory and the disk bounded;
//   - two `kloop init` on one workspace: one wins, the other is refused with the winner's pid,
//     and the workspace is whole.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "support/process_probe.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::process_is_dead;
using kloop::testing::quick_bench;
using kloop::testing::read_all;

namespace {

using env_list = std::vector<std::pair<std::string, std::string>>;

std::string kloop_binary() { return std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"; }
std::string exploit(const std::string& name) { return kloop::testing::source_dir() + "/tests/fixtures/exploits/cpu/" + name; }

// A kloop process the test starts, signals and reaps itself (with its resource usage).
struct kloop_child {
    pid_t pid = -1;
    fs::path out, err;
    int status = 0;
    rusage usage{};

    kloop_child(const std::vector<std::string>& args, const env_list& env, const fs::path& cwd, const fs::path& logs,
                const std::string& name)
        : out(logs / (name + ".out")), err(logs / (name + ".err")) {
        std::vector<std::string> argv = {kloop_binary()};
        argv.insert(argv.end(), args.begin(), args.end());
        pid = ::fork();
        if (pid == 0) {
            for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
            if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
            if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) ::_exit(126);
            std::vector<char*> c;
            for (auto& a : argv) c.push_back(a.data());
            c.push_back(nullptr);
            ::execv(c[0], c.data());
            ::_exit(127);
        }
    }
    // The exit code, or -signal.
    int wait() {
        ::wait4(pid, &status, 0, &usage);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
};

// The pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = read_all(e.path() / "stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent && state != 'Z')
            out.push_back(static_cast<pid_t>(std::atoi(name.c_str())));
    }
    return out;
}

// Polls `done` every 20 ms for up to `seconds` (generous: the machine may be busy).
template <class F>
bool within(double seconds, F done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

class OrchestratorSurvivalTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-survival-test"};
    fs::path m_tmp, m_logs, m_repo, m_op, m_kernel, m_memory;

    void SetUp() override {
        m_tmp = m_dir.path() / "tmp";
        m_logs = m_dir.path() / "logs";
        m_repo = m_dir.path() / "repo";
        m_op = m_repo / "rmsnorm";
        m_kernel = m_op / "kernel.cpp";
        m_memory = m_dir.path() / "memory.sqlite";
        fs::create_directories(m_tmp);
        fs::create_directories(m_logs);
    }

    env_list env(env_list extra = {}) const {
        env_list e = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"},
                      {"KLOOP_MEMORY_DB", m_memory.string()},
                      {"TMPDIR", m_tmp.string()}};
        e.insert(e.end(), extra.begin(), extra.end());
        return e;
    }

    // A git repository holding examples/rmsnorm with kernel.cpp = v0_naive.
    void make_repo() {
        fs::create_directories(m_repo);
        fs::copy(example_dir(), m_op, fs::copy_options::recursive);
        fs::copy_file(m_op / "versions" / "v0_naive.cpp", m_kernel);
        for (std::vector<std::string> a : {std::vector<std::string>{"init", "-q"},
                                           {"config", "user.email", "t@localhost"},
                                           {"config", "user.name", "t"},
                                           {"add", "-A"},
                                           {"commit", "-q", "-m", "start"}}) {
            kloop::platform::process_request r;
            r.argv = {"git", "-C", m_repo.string()};
            r.argv.insert(r.argv.end(), a.begin(), a.end());
            kloop::platform::posix_command_runner runner;
            ASSERT_TRUE(runner.run(r).succeeded());
        }
    }

    static std::vector<std::string> loop_bench(std::vector<std::string> args) {
        for (const auto& a : quick_bench()) args.push_back(a);
        args.insert(args.end(), {"--held-out", "0"});
        return args;
    }

    // In the repository when there is one.
    int run(const std::vector<std::string>& args, const std::string& name, env_list extra = {}) {
        kloop_child k(args, env(std::move(extra)), fs::exists(m_repo) ? m_repo : m_dir.path(), m_logs, name);
        return k.wait();
    }
    std::string err_of(const std::string& name) const { return read_all(m_logs / (name + ".err")); }
    std::string out_of(const std::string& name) const { return read_all(m_logs / (name + ".out")); }
};

}  // namespace

TEST_F(OrchestratorSurvivalTest, AKilledKloopTakesItsRunnerAndCandidateHostDown) {
    kloop_child k({"verify", example_dir(), "--candidate", example_dir() + "/broken/hang.cpp", "--timeout", "300",
                   "--no-bench", "--held-out", "0"},
                  env(), {}, m_logs, "verify");
    // The checker (kloop's child) and the candidate host (the checker's child), hanging in the call.
    pid_t runner = 0, host = 0;
    ASSERT_TRUE(within(240, [&] {
        for (pid_t c : children_of(k.pid))
            if (read_all("/proc/" + std::to_string(c) + "/comm").rfind("kloop-runner", 0) == 0)
                for (pid_t h : children_of(c)) {
                    runner = c;
                    host = h;
                    return true;
                }
        return false;
    })) << "no candidate host appeared: " << read_all(k.err);
    ::kill(k.pid, SIGKILL);
    EXPECT_EQ(k.wait(), -SIGKILL);
    EXPECT_TRUE(within(30, [&] { return process_is_dead(runner) && process_is_dead(host); }))
        << "runner " << runner << " or host " << host << " outlived kloop";
    ::kill(runner, SIGKILL);  // when the assertion above failed: leave nothing spinning
    ::kill(host, SIGKILL);

    // The dead kloop's scratch directory is still there; the next command removes it.
    EXPECT_FALSE(fs::is_empty(m_tmp));
    EXPECT_EQ(run({"status", "--workspace", (m_dir.path() / "nowhere").string()}, "status"), 2);
    EXPECT_TRUE(fs::is_empty(m_tmp)) << "left in TMPDIR: " << fs::directory_iterator(m_tmp)->path();
}

TEST_F(OrchestratorSurvivalTest, AKloopThatDiesDuringTheEvaluationLeavesARejectionNotARetry) {
    make_repo();
    ASSERT_EQ(run(loop_bench({"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", "5"}), "init"), 0)
        << err_of("init");
    // A confined candidate cannot kill kloop (the exploit corpus: kill_orchestrator.cpp); whatever
    // else does — here the test, while the candidate hangs in the A/B — must not leave the loop
    // retrying it.
    fs::copy_file(m_op / "broken" / "hang.cpp", m_kernel, fs::copy_options::overwrite_existing);
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: hang\nExpected: nothing\n\n## Strategy tags\n- hang\n");
    const fs::path ws = m_repo / "profile" / "rmsnorm-opt";
    kloop_child k(loop_bench({"iterate", "--proposal", proposal.string(), "--timeout", "300"}), env(), m_repo, m_logs,
                  "hanging");
    ASSERT_TRUE(within(240, [&] {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(ws, ec))
            if (e.path().filename().string().rfind(".staging-", 0) == 0 && fs::exists(e.path() / "evaluating.json"))
                return !children_of(k.pid).empty();
        return false;
    })) << read_all(k.err);
    ::kill(k.pid, SIGKILL);
    ASSERT_EQ(k.wait(), -SIGKILL);

    // The next command records v1 as rejected; nothing is retried.
    ASSERT_EQ(run({"status", "--json"}, "status"), 0) << err_of("status");
    const auto st = nlohmann::json::parse(out_of("status"));
    EXPECT_EQ(st.at("iterations"), 1) << st.dump(2);
    const fs::path v1 = ws / "iter_v1";
    ASSERT_TRUE(fs::exists(v1 / "benchmark_result.json"));
    EXPECT_EQ(read_all(v1 / "kernel.cpp"), read_all(m_op / "broken" / "hang.cpp"));
    EXPECT_TRUE(fs::exists(v1 / "optimization_proposal.md"));
    const auto rec = nlohmann::json::parse(read_all(v1 / "benchmark_result.json")).at("iteration");
    EXPECT_EQ(rec.at("status"), "rejected");
    EXPECT_EQ(rec.at("rejection"), "crash");
    EXPECT_NE(rec.at("reason").get<std::string>().find("kloop (pid " + std::to_string(k.pid) + ") died while evaluating it"),
              std::string::npos)
        << rec.dump(2);
    EXPECT_NE(read_all(ws / "OPT_LOG.md").find("| v1 |"), std::string::npos);

    // The loop goes on: the next candidate is v2.
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    ASSERT_EQ(run(loop_bench({"iterate", "--proposal", proposal.string()}), "next"), 0) << err_of("next");
    EXPECT_NE(out_of("next").find("v2: "), std::string::npos) << out_of("next");
}

TEST_F(OrchestratorSurvivalTest, ACandidateThatPrintsForeverLeavesKloopsMemoryAndTheDiskBounded) {
    const fs::path keep = m_dir.path() / "keep";
    kloop_child k({"verify", example_dir(), "--candidate", exploit("print_forever.cpp"), "--timeout", "10", "--no-bench",
                   "--held-out", "0", "--max-output-mib", "1", "--keep", keep.string(), "--json"},
                  env(), {}, m_logs, "verify");
    // kloop's own resident memory, sampled until it exits (the runner's buffers are not kloop's).
    long peak_kib = 0;
    for (;;) {
        const std::string status = read_all("/proc/" + std::to_string(k.pid) + "/status");
        const auto at = status.find("VmRSS:");
        if (at != std::string::npos) peak_kib = std::max(peak_kib, std::atol(status.c_str() + at + 6));
        int st = 0;
        if (::waitpid(k.pid, &st, WNOHANG) == k.pid) {
            k.status = st;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(WIFEXITED(k.status)) << read_all(k.err);
    ASSERT_EQ(WEXITSTATUS(k.status), 3) << read_all(k.err);
    const auto rec = nlohmann::json::parse(read_all(k.out));
    EXPECT_NE(kloop::testing::all_reasons(rec).find("timed out"), std::string::npos) << kloop::testing::all_reasons(rec);
    EXPECT_GT(peak_kib, 0);
    EXPECT_LT(peak_kib, 128 * 1024) << "kloop's peak RSS " << peak_kib << " KiB";
    // Two logs, each capped at 1 MiB (and a last line saying what was dropped), nothing else big.
    const fs::path out_log = keep / "gate_runner.stdout.log", err_log = keep / "gate_runner.stderr.log";
    ASSERT_TRUE(fs::exists(out_log));
    ASSERT_TRUE(fs::exists(err_log));
    for (const auto& log : {out_log, err_log}) {
        EXPECT_LE(fs::file_size(log), (1u << 20) + 200u) << log;
        EXPECT_NE(read_all(log).find("more bytes were dropped"), std::string::npos) << log;
    }
    std::uintmax_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(keep))
        if (e.is_regular_file()) total += e.file_size();
    EXPECT_LT(total, 8u << 20);
}

TEST_F(OrchestratorSurvivalTest, OfTwoConcurrentInitsOneWinsAndTheOtherIsRefusedWithItsPid) {
    make_repo();
    const auto args = loop_bench({"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", "5"});
    kloop_child a(args, env(), m_repo, m_logs, "a");
    kloop_child b(args, env(), m_repo, m_logs, "b");
    const int ca = a.wait(), cb = b.wait();
    ASSERT_TRUE((ca == 0 && cb == 2) || (ca == 2 && cb == 0)) << ca << " " << cb << "\n" << read_all(a.err) << read_all(b.err);
    const auto& winner = ca == 0 ? a : b;
    const auto& loser = ca == 0 ? b : a;
    const std::string refusal = read_all(loser.err);
    EXPECT_NE(refusal.find("(pid " + std::to_string(winner.pid) + ")"), std::string::npos) << refusal;

    // The winner's workspace is whole and nothing of the loser's is in it.
    const fs::path ws = m_repo / "profile" / "rmsnorm-opt";
    EXPECT_TRUE(fs::exists(ws / "contract.json"));
    EXPECT_TRUE(fs::exists(ws / "iter_v0" / "benchmark_result.json"));
    for (const auto& e : fs::directory_iterator(ws))
        EXPECT_NE(e.path().filename().string().rfind(".staging-", 0), 0u) << e.path();
    ASSERT_EQ(run({"status", "--json"}, "status"), 0) << err_of("status");
    EXPECT_EQ(nlohmann::json::parse(out_of("status")).at("iterations"), 0);
}
