// Unit under test: `kloop run` end to end (loop/run_driver, docs/agents.md) — the real kloop
// binary driving the loop on a copy of examples/rmsnorm with a scripted proposer
// (tests/fixtures/proposer/scripted_proposer.sh): positive, rejected, negative, refused (no
// prediction, unchanged, blocked) and overridden attempts, a proposer that crashes or hangs,
// failures in a row (exit 7), a stall, a proposer that touches the workspace or a frozen file
// (exit 5), and runs killed while the proposer ran and while an iteration ran, then resumed.
#include <gtest/gtest.h>

#include <csignal>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/kloop_process.hpp"
#include "integration/scratch_loop_repo.hpp"
#include "platform/background_process.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
using kloop::testing::kloop_run;

namespace {

class RunTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-run-test"};
    kloop::testing::scratch_loop_repo m_s;
    fs::path m_plan;

    void SetUp() override {
        m_s = kloop::testing::make_scratch_loop_repo(m_dir.path());
        m_plan = m_dir.path() / "plan";
    }

    std::vector<std::pair<std::string, std::string>> env(const std::string& fault = "") const {
        std::vector<std::pair<std::string, std::string>> e = {{"KLOOP_MEMORY_DB", (m_dir.path() / "memory.sqlite").string()}};
        if (!fault.empty()) e.emplace_back("KLOOP_FAULT_POINT", fault);
        return e;
    }

    static std::vector<std::string> quick() {
        auto q = kloop::testing::quick_bench();
        q.insert(q.end(), {"--held-out", "0"});
        return q;
    }

    void init(int cap) {
        std::vector<std::string> args = {"init", m_s.op.string(), "--candidate", m_s.kernel.string(), "--max-iterations",
                                         std::to_string(cap)};
        for (const auto& a : quick()) args.push_back(a);
        const auto r = kloop::testing::run_kloop(args, 300, env());
        ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    }

    void plan(const std::string& lines) { kloop::platform::write_file_atomic(m_plan, lines); }

    std::vector<std::string> run_args(std::vector<std::string> extra = {}) const {
        std::vector<std::string> args = {"run", "--workspace", m_s.ws.string(), "--proposer",
                                         "bash '" + kloop::testing::source_dir() +
                                             "/tests/fixtures/proposer/scripted_proposer.sh' '" + m_plan.string() + "'"};
        for (const auto& a : quick()) args.push_back(a);
        for (auto& a : extra) args.push_back(std::move(a));
        return args;
    }

    kloop_run run(std::vector<std::string> extra = {}, const std::string& fault = "") {
        return kloop::testing::run_kloop(run_args(std::move(extra)), 600, env(fault));
    }

    nlohmann::json journal() const {
        return nlohmann::json::parse(kloop::platform::read_file(m_s.ws / "run" / "run.json"));
    }

    std::vector<std::string> phases() const {
        std::vector<std::string> out;
        const auto j = journal();
        for (const auto& a : j.at("attempts")) out.push_back(a.at("phase"));
        return out;
    }

    nlohmann::json status() const {
        const auto r = kloop::testing::run_kloop({"status", "--json", "--workspace", m_s.ws.string()}, 60, env());
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.record;
    }

    // The kernel file's SHA-256 at the start of each attempt, from the proposer's trace.
    std::vector<std::string> traced_kernels() const {
        std::vector<std::string> out;
        std::istringstream in(kloop::platform::read_file(m_plan.string() + ".trace"));
        for (std::string line; std::getline(in, line);) out.push_back(line.substr(line.rfind(' ') + 1));
        return out;
    }
};

using phase_list = std::vector<std::string>;

}  // namespace

// Every kind of attempt in one run. The proposer always starts from the best version's sources,
// sees why its previous attempt failed, and the run ends when it says it is done.
TEST_F(RunTest, DrivesTheLoopThroughEveryKindOfAttempt) {
    init(8);
    plan("submit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\n"  // v1 positive
         "submit|broken/partial_write.cpp|skip tail|\n"                       // refused: no prediction
         "submit|broken/partial_write.cpp|skip tail|speedup 1-2\n"            // v2 rejected (gate)
         "submit|broken/wrong_result.cpp|skip tail|speedup 1-2\n"             // refused: blocked
         "crash\n"                                                            // failed
         "submit|broken/wrong_result.cpp|skip tail|speedup 1-2|the tail is computed now\n"  // v3 rejected, override
         "unchanged|noop|no change\n"                                         // refused: unchanged
         "hang\n"                                                             // failed: time limit
         "done\n");
    const auto r = run({"--proposer-timeout", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    if (r.out.find("v1: positive") == std::string::npos)
        if (const auto busy = kloop::testing::machine_too_busy_for_timing()) GTEST_SKIP() << *busy << "\n" << r.out;
    EXPECT_EQ(phases(), (phase_list{"iterated", "refused", "iterated", "refused", "failed", "iterated", "refused", "failed",
                                    "done"}))
        << journal().dump(2);
    const auto j = journal();
    const auto& at = j.at("attempts");
    EXPECT_EQ(at[0].at("iteration_status"), "positive");
    EXPECT_NE(at[1].at("reason").get<std::string>().find("rediction"), std::string::npos) << at[1].dump();
    EXPECT_EQ(at[2].at("iteration_status"), "rejected");
    EXPECT_NE(at[3].at("reason").get<std::string>().find("locked"), std::string::npos) << at[3].dump();
    EXPECT_NE(at[4].at("reason").get<std::string>().find("scripted crash"), std::string::npos) << at[4].dump();
    EXPECT_EQ(at[5].at("iteration_status"), "rejected");
    EXPECT_NE(at[6].at("reason").get<std::string>().find("unchanged"), std::string::npos) << at[6].dump();
    EXPECT_NE(at[7].at("proposer").get<std::string>().find("timed out"), std::string::npos) << at[7].dump();
    EXPECT_EQ(j.at("ended"), "the proposer has nothing more to propose");
    EXPECT_NE(r.out.find("run ended: the proposer has nothing more to propose"), std::string::npos) << r.out;

    // Three iterations recorded; v1 stays the best; the override's reason is in its record.
    const auto st = status();
    EXPECT_EQ(st.at("iterations"), 3);
    EXPECT_EQ(st.at("best").at("version"), 1);
    EXPECT_NE(kloop::platform::read_file(m_s.ws / "iter_v3" / "optimization_proposal.md").find("the tail is computed now"),
              std::string::npos);
    EXPECT_NE(kloop::platform::read_file(m_s.ws / "iter_v3" / "iteration_summary.md").find("the tail is computed now"),
              std::string::npos);

    // Each attempt after v1 started from v1's sources, and was told about a failed predecessor.
    const auto v1 = kloop::platform::sha256_file(m_s.ws / "iter_v1" / "kernel.cpp");
    const auto kernels = traced_kernels();
    ASSERT_EQ(kernels.size(), 9u);
    for (std::size_t k = 1; k < kernels.size(); ++k) EXPECT_EQ(kernels[k], v1) << "attempt " << k + 1;
    EXPECT_TRUE(fs::exists(m_s.ws / "run" / "attempt-003" / "context" / "previous_attempt.md"));
    EXPECT_FALSE(fs::exists(m_s.ws / "run" / "attempt-002" / "context" / "previous_attempt.md"));
    const auto context = m_s.ws / "run" / "attempt-004" / "context";
    EXPECT_NE(kloop::platform::read_file(context / "strategies.json").find("skip-tail"), std::string::npos);
    EXPECT_TRUE(fs::exists(context / "last" / "iteration_summary.md"));
    EXPECT_TRUE(fs::exists(context / "best" / "kernel.cpp"));
    EXPECT_EQ(nlohmann::json::parse(kloop::platform::read_file(context / "status.json")).at("iterations"), 2);
}

// Failed or refused attempts in a row end the run with exit 7; a proposer past its time limit is
// killed with its process group.
TEST_F(RunTest, FailuresInARowEndTheRunWithExitSeven) {
    init(4);
    plan("crash\nhang\nunchanged|noop|speedup 1-2\n");
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run({"--proposer-timeout", "2"});
    EXPECT_EQ(r.exit_code, 7) << r.err << r.out;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(120));
    EXPECT_EQ(phases(), (phase_list{"failed", "failed", "refused"}));
    EXPECT_NE(journal().at("ended").get<std::string>().find("--max-failures 3"), std::string::npos);
    EXPECT_EQ(status().at("iterations"), 0);
    // A later run starts its own count.
    plan("crash\nhang\nunchanged|noop|speedup 1-2\ndone\n");
    const auto again = run({"--proposer-timeout", "2"});
    EXPECT_EQ(again.exit_code, 0) << again.err << again.out;
}

// A proposer that leaves a process running — here out of its process group, with setsid — has it
// killed when it ends, before its candidate is built or timed, and the run says so.
TEST_F(RunTest, WhatAProposerLeavesRunningIsKilledBeforeItsCandidateIsEvaluated) {
    init(4);
    const std::string pidfile = m_plan.string() + ".lingering";
    plan("linger|" + pidfile + "|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\ndone\n");
    const auto r = run();
    ASSERT_TRUE(fs::exists(pidfile)) << r.err << r.out;
    const pid_t pid = std::stoi(kloop::platform::read_file(pidfile));
    const bool outlived = ::kill(pid, 0) == 0;
    if (outlived) ::kill(pid, SIGKILL);
    EXPECT_FALSE(outlived) << "the proposer's setsid sleep " << pid << " outlived its attempt";
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto killed = r.out.find("attempt 1: killed 1 process(es) the proposer left running: " + std::to_string(pid) +
                                   " (sleep 1000)");
    ASSERT_NE(killed, std::string::npos) << r.out;
    EXPECT_LT(killed, r.out.find("attempt 1: v1: ")) << r.out;
    EXPECT_EQ(phases(), (phase_list{"iterated", "done"}));
}

// The workspace's records and the frozen files are not the proposer's to write: either change
// ends the run with exit 5, naming what changed; the frozen files get their modes back.
TEST_F(RunTest, AProposerThatTouchesTheWorkspaceOrAFrozenFileEndsTheRun) {
    init(4);
    const auto mode_before = fs::status(m_s.op / "op.toml").permissions();
    plan("tamper\n");
    const auto t = run();
    EXPECT_EQ(t.exit_code, 5) << t.err << t.out;
    EXPECT_NE(t.err.find("changed OPT_LOG.md"), std::string::npos) << t.err;
    EXPECT_EQ(phases(), (phase_list{"tampered"}));

    kloop::testing::git_in(m_s.repo, {"checkout", "--", "."});
    const auto log = kloop::platform::read_file(m_s.ws / "OPT_LOG.md");
    kloop::platform::write_file_atomic(m_s.ws / "OPT_LOG.md", log.substr(0, log.rfind("| v9 | forged |")));
    plan("tamper\nedit-frozen\n");
    const auto f = run();
    EXPECT_EQ(f.exit_code, 5) << f.err << f.out;
    EXPECT_NE(f.err.find("op.toml"), std::string::npos) << f.err;
    EXPECT_EQ(phases(), (phase_list{"tampered", "tampered"}));
    EXPECT_EQ(fs::status(m_s.op / "op.toml").permissions(), mode_before);
    kloop::testing::git_in(m_s.repo, {"checkout", "--", "."});
    EXPECT_EQ(status().at("iterations"), 0);
}

// --max-stall: iterations without improvement end the run.
TEST_F(RunTest, AStallEndsTheRun) {
    init(6);
    plan("submit|broken/crash.cpp|crash one|speedup 1-2\nsubmit|broken/abort.cpp|abort two|speedup 1-2\ndone\n");
    const auto r = run({"--max-stall", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(phases(), (phase_list{"iterated", "iterated"}));
    EXPECT_NE(journal().at("ended").get<std::string>().find("2 iterations without improvement"), std::string::npos)
        << journal().dump(2);
}

// A run killed while its proposer ran asks again; one killed inside its iteration submits the
// saved candidate again; neither leaves the proposer running or the frozen files read-only.
TEST_F(RunTest, AKilledRunResumesWhereItStood) {
    init(4);
    const auto mode_before = fs::status(m_s.op / "op.toml").permissions();
    plan("pause\nsubmit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\ndone\n");
    kloop::platform::background_request bg;
    bg.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
    for (const auto& a : run_args()) bg.argv.push_back(a);
    bg.env_overrides = env();
    bg.env_overrides.emplace_back("KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home");
    bg.log_file = m_dir.path() / "killed.log";
    {
        kloop::platform::background_process kloop_run_process(bg);
        ASSERT_TRUE(kloop_run_process.started()) << kloop_run_process.spawn_error();
        const fs::path paused = m_plan.string() + ".paused-1";
        for (int i = 0; i < 600 && !fs::exists(paused); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ASSERT_TRUE(fs::exists(paused)) << kloop::platform::read_file(bg.log_file);
        ::kill(kloop_run_process.pid(), SIGKILL);
        kloop_run_process.stop();
    }
    EXPECT_EQ(phases(), (phase_list{"proposing"}));

    // Killed inside the iteration, before anything was recorded.
    const auto k = run({}, "iterate.staged");
    EXPECT_NE(k.exit_code, 0) << k.err << k.out;  // killed by its own fault point
    EXPECT_EQ(phases(), (phase_list{"interrupted", "submitted"}));

    const auto r = run();
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("submitting its saved candidate again"), std::string::npos) << r.out;
    EXPECT_EQ(phases(), (phase_list{"interrupted", "iterated", "done"}));
    EXPECT_EQ(status().at("iterations"), 1);
    EXPECT_EQ(fs::status(m_s.op / "op.toml").permissions(), mode_before);
    // The paused proposer's process group died with the kloop that started it.
    const pid_t sleeper = std::stoi(kloop::platform::read_file(m_plan.string() + ".sleep-pid"));
    EXPECT_NE(::kill(sleeper, 0), 0) << "the proposer's child " << sleeper << " outlived the killed kloop";
}

// --parallel 2 on two fake devices (KLOOP_DEVICES stands in for the GPU probe; this CPU op is
// timed on the host): each round's proposers work at once in their own lanes, from the best
// version's sources; the round's candidates race against the same best, each record naming its
// device; of two that beat it, the larger speedup is promoted and the other is outpaced; a
// sibling identical to an earlier one is refused; after the run the kernel file holds the best.
TEST_F(RunTest, ParallelRoundsRaceTheirSiblingsAgainstOneBestAndPromoteTheFastest) {
    init(6);
    plan("submit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\n"  // round 1: v1
         "submit|versions/v4_tuned.cpp|tuning|speedup 1.2-100\n"            //          v2
         "unchanged|noop|speedup 1-2\n"                                     // round 2: refused
         "submit|broken/wrong_result.cpp|skip tail|speedup 1-2\n"           //          v3 rejected
         "plant|versions/v2_streaming.cpp|streaming|speedup 1-2\n"          // round 3: v4
         "submit|versions/v2_streaming.cpp|streaming again|speedup 1-2\n"   //          refused: its twin
         "done\ndone\n");
    auto e = env();
    e.emplace_back("KLOOP_DEVICES", "fake-gpu-0,fake-gpu-1");
    const auto r = kloop::testing::run_kloop(run_args({"--parallel", "2", "--devices", "all"}), 900, e);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(phases(), (phase_list{"iterated", "iterated", "refused", "iterated", "iterated", "refused", "done", "done"}))
        << journal().dump(2);
    const auto j = journal();
    for (std::size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(j.at("attempts")[i].at("lane"), static_cast<int>(i % 2) + 1);
        EXPECT_EQ(j.at("attempts")[i].at("round"), static_cast<int>(i / 2) + 1);
    }
    EXPECT_NE(j.at("attempts")[5].at("reason").get<std::string>().find("the one attempt 5 submitted in the same round"),
              std::string::npos)
        << j.at("attempts")[5].dump();
    EXPECT_NE(r.out.find("round 1: 2 proposer(s) at once, attempts 1 to 2"), std::string::npos) << r.out;

    const auto rec = [&](int n) {
        return nlohmann::json::parse(kloop::platform::read_file(m_s.ws / ("iter_v" + std::to_string(n)) /
                                                                "benchmark_result.json"))
            .at("iteration");
    };
    for (int n : {1, 2}) {
        EXPECT_EQ(rec(n).at("vs_best"), 0) << n;  // both siblings against v0
        const auto device = rec(n).at("device").get<std::string>();
        EXPECT_TRUE(device == "fake-gpu-0" || device == "fake-gpu-1") << device;
    }
    if (rec(1).at("status") != "positive" || rec(2).at("status") != "positive")
        if (const auto busy = kloop::testing::machine_too_busy_for_timing()) GTEST_SKIP() << *busy << "\n" << r.out;
    ASSERT_EQ(rec(1).at("status"), "positive") << rec(1).dump(2);
    ASSERT_EQ(rec(2).at("status"), "positive") << rec(2).dump(2);
    // Exactly one is outpaced, by the other, which has the larger speedup and is the best.
    const bool first_outpaced = !rec(1).at("outpaced_by").is_null();
    ASSERT_NE(first_outpaced, !rec(2).at("outpaced_by").is_null()) << rec(1).dump() << rec(2).dump();
    const int winner = first_outpaced ? 2 : 1, loser = 3 - winner;
    EXPECT_EQ(rec(loser).at("outpaced_by"), winner);
    EXPECT_GE(rec(winner).at("ab").at("overall").at("speedup").get<double>(),
              rec(loser).at("ab").at("overall").at("speedup").get<double>());
    EXPECT_NE(rec(loser).at("reason").get<std::string>().find("not promoted: its sibling v" + std::to_string(winner)),
              std::string::npos);
    EXPECT_EQ(rec(3).at("vs_best"), winner);
    EXPECT_EQ(rec(3).at("status"), "rejected");
    EXPECT_EQ(rec(4).at("vs_best"), winner);
    EXPECT_EQ(status().at("best").at("version"), winner);

    // Rounds 2 to 4 started from the winner's sources, in lanes holding the kernel's directory.
    const auto best_sha = kloop::platform::sha256_file(m_s.ws / ("iter_v" + std::to_string(winner)) / "kernel.cpp");
    const auto kernels = traced_kernels();
    ASSERT_EQ(kernels.size(), 8u);
    const auto v0 = kloop::platform::sha256_file(m_s.ws / "iter_v0" / "kernel.cpp");
    EXPECT_EQ(kernels[0], v0);
    EXPECT_EQ(kernels[1], v0);
    for (std::size_t k = 2; k < kernels.size(); ++k) EXPECT_EQ(kernels[k], best_sha) << "attempt " << k + 1;
    EXPECT_TRUE(fs::exists(m_s.ws / "run" / "attempt-001" / "lane" / "versions" / "v1_rowwise.cpp"));
    // What a proposer plants where kloop saves its candidate is gone before the copy is made.
    EXPECT_TRUE(fs::exists(m_s.ws / "run" / "attempt-005" / "submitted" / "kernel.cpp"));
    EXPECT_FALSE(fs::exists(m_s.ws / "run" / "attempt-005" / "submitted" / "planted.h"));
    EXPECT_NE(kloop::platform::read_file(m_s.ws / "run" / "attempt-002" / "context" / "README.md").find("lane 2 of 2"),
              std::string::npos);
    // Every iteration committed as the kernel file; the kernel file now holds the best.
    const auto log = kloop::testing::git_in(m_s.repo, {"log", "--format=%s"}).stdout_text;
    for (int n = 1; n <= 4; ++n)
        EXPECT_NE(log.find("kloop rmsnorm v" + std::to_string(n) + " "), std::string::npos) << n << "\n" << log;
    const auto committed_v2 =
        kloop::testing::git_in(m_s.repo, {"show", "HEAD~2:rmsnorm/kernel.cpp"}).stdout_text;  // v4, v3, then v2
    EXPECT_EQ(committed_v2, kloop::platform::read_file(m_s.ws / "iter_v2" / "kernel.cpp"));
    EXPECT_EQ(kloop::platform::sha256_file(m_s.kernel), best_sha);
    std::cout << r.out;
}

// A run killed in a round's evaluations submits the round's unrecorded siblings again, together.
TEST_F(RunTest, ARunKilledInARoundResubmitsItsSiblingsTogether) {
    init(4);
    plan("submit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\n"
         "submit|broken/wrong_result.cpp|skip tail|speedup 1-2\n"
         "done\ndone\n");
    const auto k = run({"--parallel", "2"}, "iterate.compared");  // one slot: killed after the first A/B
    EXPECT_NE(k.exit_code, 0) << k.err << k.out;
    EXPECT_EQ(phases(), (phase_list{"submitted", "submitted"}));
    EXPECT_EQ(status().at("iterations"), 0);

    const auto r = run({"--parallel", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("submitting its 2 unrecorded sibling(s) again"), std::string::npos) << r.out;
    EXPECT_EQ(phases(), (phase_list{"iterated", "iterated", "done", "done"})) << journal().dump(2);
    const auto j = journal();
    EXPECT_EQ(j.at("attempts")[0].at("iteration"), 1);
    EXPECT_EQ(j.at("attempts")[1].at("iteration"), 2);
    EXPECT_EQ(j.at("attempts")[1].at("iteration_status"), "rejected");
    EXPECT_EQ(status().at("iterations"), 2);
}

// In a round, a proposer that touches the workspace ends the run (exit 5) like one alone; every
// sibling of the round carries the reason, since which of them did it cannot be told.
TEST_F(RunTest, AParallelRoundWhoseProposerTouchesTheWorkspaceEndsTheRun) {
    init(4);
    plan("tamper\nsubmit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100\n");
    const auto t = run({"--parallel", "2"});
    EXPECT_EQ(t.exit_code, 5) << t.err << t.out;
    EXPECT_NE(t.err.find("changed OPT_LOG.md"), std::string::npos) << t.err;
    EXPECT_EQ(phases(), (phase_list{"tampered", "tampered"}));
    EXPECT_NE(journal().at("attempts")[1].at("reason").get<std::string>().find("one of the round's proposers"),
              std::string::npos);
    EXPECT_EQ(status().at("iterations"), 0);  // nothing of the round was measured
}
