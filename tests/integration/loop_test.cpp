// Unit under test: the loop end to end through the real kloop binary — init, iterate (positive,
// rejected, negative), status, best, report, nogo, dispatch; the iteration cap; blocked
// fingerprints; a changed frozen file (exit 5); and SIGKILL at every fault point and at random
// moments during iterate, after which the next command reads a consistent workspace.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::kloop_run;
using kloop::testing::quick_bench;

namespace {

std::string kloop_binary() { return std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"; }

std::string proposal_text(const std::string& direction, const std::string& tags) {
    return "Direction: " + direction + "\nExpected: some shapes move\n\n## Strategy tags\n" + tags + "\n";
}

// A scratch git repository holding a copy of examples/rmsnorm with kernel.cpp = v0_naive.
class LoopTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-loop-test"};
    fs::path m_repo, m_op, m_kernel, m_ws, m_memory;

    void SetUp() override {
        m_repo = m_dir.path() / "repo";
        m_op = m_repo / "rmsnorm";
        fs::create_directories(m_repo);
        fs::copy(example_dir(), m_op, fs::copy_options::recursive);
        m_kernel = m_op / "kernel.cpp";
        fs::copy_file(m_op / "versions" / "v0_naive.cpp", m_kernel);
        m_ws = m_repo / "profile" / "rmsnorm-opt";
        m_memory = m_dir.path() / "memory.sqlite";
        git({"init", "-q"});
        git({"config", "user.email", "t@localhost"});
        git({"config", "user.name", "t"});
        git({"add", "-A"});
        git({"commit", "-q", "-m", "start"});
    }

    kloop::platform::process_result git(std::vector<std::string> args) {
        kloop::platform::process_request r;
        r.argv = {"git", "-C", m_repo.string()};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        kloop::platform::posix_command_runner runner;
        auto res = runner.run(r);
        EXPECT_TRUE(res.succeeded()) << res.stderr_text;
        return res;
    }

    std::vector<std::pair<std::string, std::string>> env(const std::string& fault = "") const {
        std::vector<std::pair<std::string, std::string>> e = {
            {"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"}, {"KLOOP_MEMORY_DB", m_memory.string()}};
        if (!fault.empty()) e.emplace_back("KLOOP_FAULT_POINT", fault);
        return e;
    }

    // With `bench`, the quick stopping rule and no held-out shapes: these tests are about the loop's
    // records, and a gate of the listed shapes keeps them short (held-out draws: verify's tests).
    kloop_run run(std::vector<std::string> args, bool bench = false, const std::string& fault = "") {
        if (bench) {
            for (const auto& a : quick_bench()) args.push_back(a);
            args.insert(args.end(), {"--held-out", "0"});
        }
        kloop::platform::process_request req;
        req.argv = {kloop_binary()};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        req.env_overrides = env(fault);
        req.cwd = m_repo;
        req.timeout_s = 300;
        req.max_capture_bytes = 64 << 20;
        kloop::platform::posix_command_runner runner;
        const auto r = runner.run(req);
        kloop_run k;
        k.exit_code = r.started && r.term_signal == 0 && !r.timed_out ? r.exit_code : -r.term_signal;
        k.out = r.stdout_text;
        k.err = r.stderr_text;
        k.record = nlohmann::json::parse(k.out, nullptr, false);
        if (k.record.is_discarded()) k.record = nullptr;
        return k;
    }

    kloop_run init(int cap) {
        return run({"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", std::to_string(cap)}, true);
    }

    // Writes `source` (relative to the op dir) over kernel.cpp and iterates with a proposal.
    kloop_run iterate(const std::string& source, const std::string& direction, const std::string& tags,
                      const std::string& fault = "") {
        fs::copy_file(m_op / source, m_kernel, fs::copy_options::overwrite_existing);
        const auto proposal = m_dir.path() / "proposal.md";
        kloop::platform::write_file_atomic(proposal, proposal_text(direction, tags));
        return run({"iterate", "--proposal", proposal.string()}, true, fault);
    }

    nlohmann::json status() {
        auto s = run({"status", "--json"});
        EXPECT_EQ(s.exit_code, 0) << s.err;
        return s.record;
    }

    // Every iter_vN is complete, numbers are contiguous, OPT_LOG has one row each, no staging left.
    void expect_consistent(int iterations) {
        const auto st = status();  // takes the lock when free, so it also repairs
        ASSERT_TRUE(st.is_object());
        EXPECT_EQ(st.at("iterations"), iterations);
        const auto log = kloop::platform::read_file(m_ws / "OPT_LOG.md");
        for (int n = 0; n <= iterations; ++n) {
            const auto dir = m_ws / ("iter_v" + std::to_string(n));
            EXPECT_TRUE(fs::exists(dir / "benchmark_result.json")) << dir;
            EXPECT_TRUE(fs::exists(dir / "iteration_summary.md")) << dir;
            EXPECT_TRUE(fs::exists(dir / "kernel.cpp")) << dir;
            if (n > 0) {
                EXPECT_TRUE(fs::exists(dir / "optimization_proposal.md")) << dir;
            }
            const std::string row = "| v" + std::to_string(n) + " |";
            EXPECT_EQ(log.find(row), log.rfind(row)) << "duplicate row " << row;
            EXPECT_NE(log.find(row), std::string::npos) << "missing row " << row;
        }
        EXPECT_FALSE(fs::exists(m_ws / ("iter_v" + std::to_string(iterations + 1))));
        for (const auto& e : fs::directory_iterator(m_ws))
            EXPECT_NE(e.path().filename().string().rfind(".staging-", 0), 0u) << e.path();
    }
};

}  // namespace

TEST_F(LoopTest, FullLoopClassifiesAgainstTheCurrentBest) {
    const auto i = init(6);
    ASSERT_EQ(i.exit_code, 0) << i.err << i.out;
    for (const char* f : {"contract.json", "docs/draft.md", "OPT_LOG.md", "TRAPS.md", "dispatch.md", "run_manifest.json",
                          "iter_v0/kernel.cpp", "iter_v0/benchmark_result.json", "iter_v0/iteration_summary.md"})
        EXPECT_TRUE(fs::exists(m_ws / f)) << f;
    EXPECT_NE(kloop::platform::read_file(m_repo / ".gitignore").find("/profile/rmsnorm-opt/"), std::string::npos);
    const auto draft = kloop::platform::read_file(m_ws / "docs" / "draft.md");
    for (const char* s : {"Entry points", "rmsnorm_fwd", "Target shapes", "Validation command", "Promotion criteria", "Frozen scope",
                          "reference.cpp"})
        EXPECT_NE(draft.find(s), std::string::npos) << s;
    EXPECT_NE(kloop::platform::read_file(m_ws / "OPT_LOG.md").find("**Env**"), std::string::npos);

    auto v1 = iterate("versions/v1_rowwise.cpp", "one pass per row, 32 lanes", "- vectorization\n- loop fusion");
    ASSERT_EQ(v1.exit_code, 0) << v1.err << v1.out;
    // The rest builds on v1 being the best, a timing verdict: on a machine too busy to settle it,
    // say so rather than fail.
    if (v1.out.find("v1: positive") == std::string::npos)
        if (const auto busy = kloop::testing::machine_too_busy_for_timing()) GTEST_SKIP() << *busy << "\n" << v1.out;
    EXPECT_NE(v1.out.find("v1: positive"), std::string::npos) << v1.out;

    auto v2 = iterate("broken/partial_write.cpp", "skip the last row", "- skip tail");
    ASSERT_EQ(v2.exit_code, 0) << v2.err << v2.out;
    EXPECT_NE(v2.out.find("v2: rejected"), std::string::npos) << v2.out;

    auto v3 = iterate("versions/v3_slower.cpp", "two sweeps", "- two pass");
    ASSERT_EQ(v3.exit_code, 0) << v3.err << v3.out;
    if (v3.out.find("v3: negative") == std::string::npos)
        if (const auto busy = kloop::testing::machine_too_busy_for_timing()) GTEST_SKIP() << *busy << "\n" << v3.out;
    EXPECT_NE(v3.out.find("v3: negative"), std::string::npos) << v3.out;
    EXPECT_NE(v3.out.find("vs v1"), std::string::npos) << v3.out;  // against the best, not the previous version

    const auto st = status();
    EXPECT_EQ(st.at("iterations"), 3);
    EXPECT_EQ(st.at("max_iterations"), 6);
    EXPECT_EQ(st.at("best").at("version"), 1);
    EXPECT_EQ(st.at("since_improvement"), 2);
    EXPECT_EQ(st.at("counts").at("rejected"), 1);
    EXPECT_EQ(st.at("blocked").size(), 1u);    // the rejected "skip tail"
    EXPECT_EQ(st.at("preferred").size(), 1u);  // the positive v1
    EXPECT_EQ(st.at("next").at("step"), "iterate");

    const auto best = run({"best", "--json"});
    ASSERT_EQ(best.exit_code, 0) << best.err;
    EXPECT_EQ(best.record.at("best"), 1);
    EXPECT_EQ(best.record.at("ranking").size(), 2u);  // v1, v0
    EXPECT_NE(best.record.at("rule").get<std::string>().find("profile"), std::string::npos);

    const auto v1rec = kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json");
    const auto j = nlohmann::json::parse(v1rec);
    EXPECT_EQ(j.at("schema_version"), 1);
    EXPECT_EQ(j.at("iteration").at("status"), "positive");
    // A CPU op: Nsight Compute does not apply, and the full-profile rule does not hold it back.
    EXPECT_EQ(j.at("iteration").at("profile").at("status"), "n/a");
    EXPECT_FALSE(j.at("iteration").at("profile").at("suspect").get<bool>());
    EXPECT_EQ(j.at("ab").at("kind"), "kloop.compare");
    EXPECT_EQ(j.at("evaluation").at("status"), "passed");

    const auto log = git({"log", "--format=%s"}).stdout_text;
    EXPECT_NE(log.find("kloop rmsnorm v1 (positive"), std::string::npos) << log;
    EXPECT_NE(log.find("kloop rmsnorm v2 (rejected"), std::string::npos) << log;
    EXPECT_NE(log.find("kloop rmsnorm v3 (negative"), std::string::npos) << log;
    // Only the candidate is committed; the workspace is ignored.
    EXPECT_EQ(git({"show", "--name-only", "--format=", "HEAD"}).stdout_text, "rmsnorm/kernel.cpp\n");

    const auto d = run({"dispatch", "--bucket", "N >= 4096", "--entry", "rmsnorm_fwd", "--iteration", "1", "--shape",
                        "fwd/n4096_d1024", "--why", "row fits L2"});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_NE(kloop::platform::read_file(m_ws / "dispatch.md").find("A/B of v1 vs v0"), std::string::npos);

    const auto rep = run({"report", "--quiet"}, true);
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    const auto summary = kloop::platform::read_file(m_ws / "final_summary.md");
    EXPECT_NE(summary.find("Promotion verdict: PROMOTE v1"), std::string::npos) << summary;
    for (const char* s : {"## Final claim", "Equal-weight geomean speedup", "| fwd/n4096_d1024 | v0 |", "**Baseline**",
                          "**Candidate**", "**Machine**", "kloop init", "kloop iterate", "## Rejected versions", "v2 (",
                          "## Strategy memory", "profile evidence"})
        EXPECT_NE(summary.find(s), std::string::npos) << s;

    const auto nogo = run({"nogo", "--json"});
    ASSERT_EQ(nogo.exit_code, 0) << nogo.err;
    EXPECT_FALSE(nogo.record.at("cleared").get<bool>());  // no bound named
    EXPECT_EQ(nogo.record.at("positive_version"), 1);
}

TEST_F(LoopTest, BlockedFingerprintWarnsAndTheCapRefuses) {
    ASSERT_EQ(init(2).exit_code, 0);
    auto a = iterate("broken/wrong_result.cpp", "drop w", "- Drop Scale");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.err.find("BLOCKED"), std::string::npos);
    auto b = iterate("broken/wrong_result.cpp", "drop w again", "- drop_scale");  // same fingerprint, other spelling
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.err.find("BLOCKED"), std::string::npos) << b.err;
    const auto st = status();
    EXPECT_EQ(st.at("next").at("step"), "stop_cap");
    auto c = iterate("versions/v1_rowwise.cpp", "one more", "- vectorization");
    EXPECT_EQ(c.exit_code, 2);
    EXPECT_NE(c.err.find("iteration cap (2) is reached"), std::string::npos) << c.err;
    EXPECT_FALSE(fs::exists(m_ws / "iter_v3"));
}

TEST_F(LoopTest, StallAfterThreeIterationsWithoutImprovement) {
    ASSERT_EQ(init(10).exit_code, 0);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(iterate("broken/crash.cpp", "try " + std::to_string(i), "- t" + std::to_string(i)).exit_code, 0);
    const auto st = status();
    EXPECT_EQ(st.at("since_improvement"), 3);
    EXPECT_EQ(st.at("next").at("step"), "stall");
    EXPECT_EQ(st.at("records").at(1).at("rejection"), "crash");
}

TEST_F(LoopTest, ChangedFrozenFileIsAContractViolation) {
    ASSERT_EQ(init(3).exit_code, 0);
    kloop::platform::write_file_atomic(m_op / "reference.cpp",
                                       kloop::platform::read_file(m_op / "reference.cpp") + "\n// tolerance hack\n");
    for (const auto& args : std::vector<std::vector<std::string>>{{"status"}, {"best"}, {"nogo"}, {"report"}}) {
        const auto r = run(args);
        EXPECT_EQ(r.exit_code, 5) << args[0] << r.err;
        EXPECT_NE(r.err.find("reference.cpp"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("contract sha256"), std::string::npos) << r.err;
    }
    const auto it = iterate("versions/v1_rowwise.cpp", "x", "- y");
    EXPECT_EQ(it.exit_code, 5);
    EXPECT_FALSE(fs::exists(m_ws / "iter_v1"));
}

TEST_F(LoopTest, SigkillAtEveryFaultPointLeavesAConsistentWorkspace) {
    ASSERT_EQ(init(40).exit_code, 0);
    int recorded = 0;
    for (const char* point : {"iterate.staged", "iterate.compared", "iterate.committed", "iterate.written", "iterate.renamed",
                              "iterate.logged", "iterate.remembered"}) {
        SCOPED_TRACE(point);
        const auto r = iterate("broken/wrong_result.cpp", std::string("killed at ") + point, "- drop scale", point);
        EXPECT_EQ(r.exit_code, -SIGKILL) << r.err << r.out;
        // Up to and including "written" the iteration does not exist; from "renamed" on it does.
        const std::string p = point;
        if (p == "iterate.renamed" || p == "iterate.logged" || p == "iterate.remembered") ++recorded;
        expect_consistent(recorded);
    }
    // The memory holds every recorded iteration (repaired by the commands above).
    auto ok = iterate("versions/v1_rowwise.cpp", "after the kills", "- vectorization");
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    ++recorded;
    expect_consistent(recorded);
    EXPECT_EQ(status().at("blocked").at(0).at("rejected"), 3);
}

TEST_F(LoopTest, SigkillAtRandomMomentsLeavesAConsistentWorkspace) {
    ASSERT_EQ(init(40).exit_code, 0);
    const auto proposal = m_dir.path() / "p.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("random kill", "- r"));
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    std::vector<std::string> args = {kloop_binary(), "iterate", "--proposal", proposal.string(), "--held-out", "0"};
    for (const auto& a : quick_bench()) args.push_back(a);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> delay_ms(0, 4000);
    int before = 0;
    for (int k = 0; k < 6; ++k) {
        const int ms = delay_ms(rng);
        SCOPED_TRACE("kill after " + std::to_string(ms) + " ms");
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            for (const auto& [n, v] : env()) ::setenv(n.c_str(), v.c_str(), 1);
            if (::chdir(m_repo.c_str()) != 0) ::_exit(126);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::usleep(static_cast<useconds_t>(ms) * 1000);
        ::kill(pid, SIGKILL);
        int st = 0;
        ::waitpid(pid, &st, 0);
        const int now = status().at("iterations").get<int>();
        EXPECT_TRUE(now == before || now == before + 1) << before << " -> " << now;
        expect_consistent(now);
        before = now;
    }
}
