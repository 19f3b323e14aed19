// Unit under test: the loop end to end through the real kloop binary — init, iterate (positive,
// rejected, negative), status, best, report, nogo, dispatch; the iteration cap; blocked
// fingerprints (warned, or refused without an override reason when enforced); predictions
// registered, scored and calibrated, and refused when required; a changed frozen file (exit 5); SIGKILL at every fault point and at random
// moments during iterate, after which the next command reads a consistent workspace; and the
// fault-injection run: more than 50 SIGKILLs of init, iterate, report and verify, by pid and by
// process group, at every named point and at moments spread over each command's run, after each
// of which nothing of the run is left running, no temporary file outlives the next command,
// and every logged iteration has its snapshot, its commit and its memory row.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "kloop_process.hpp"
#include "integration/scratch_loop_repo.hpp"
#include "platform/file_io.hpp"
#include "loop/iteration.hpp"
#include "loop/proposal.hpp"
#include "loop/strategy_memory.hpp"
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
        const auto s = kloop::testing::make_scratch_loop_repo(m_dir.path());
        m_repo = s.repo, m_op = s.op, m_kernel = s.kernel, m_ws = s.ws;
        m_memory = m_dir.path() / "memory.sqlite";
    }

    kloop::platform::process_result git(std::vector<std::string> args) { return kloop::testing::git_in(m_repo, args); }

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

    // The driver's rules (loop::iterate_request; `kloop iterate` sets neither): the message of the
    // proposal_refused that run_iteration throws for `proposal` ("" and a failure when it measures).
    struct driver_rules {
        bool require_prediction = false;
        bool enforce_blocked = false;
    };
    std::string refusal_of(const fs::path& proposal, driver_rules rules) {
        kloop::loop::iterate_request req;
        req.workspace = m_ws;
        req.candidate = m_kernel;
        req.proposal = proposal;
        req.memory_db = m_memory;
        req.command_line = {"test"};
        req.require_prediction = rules.require_prediction;
        req.enforce_blocked = rules.enforce_blocked;
        kloop::platform::posix_command_runner runner;
        try {
            (void)kloop::loop::run_iteration(req, runner);
        } catch (const kloop::loop::proposal_refused& e) {
            return e.what();
        }
        ADD_FAILURE() << "the proposal was measured";
        return "";
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

// A candidate that includes a header beside it: init and iterate stage, snapshot and commit the
// header with it (the iteration builds: the staged copy finds it), a header-only change is a new
// version with the same candidate hash and other sources, and `kloop verify` refuses a header
// from outside the candidate's directory.
TEST_F(LoopTest, LocalHeadersTravelWithTheCandidate) {
    const auto header = m_op / "rms_tuning.hpp";
    kloop::platform::write_file_atomic(header, "#pragma once\n// tuning A\n");
    kloop::platform::write_file_atomic(
        m_kernel, "#include \"rms_tuning.hpp\"\n" + kloop::platform::read_file(m_op / "versions" / "v1_rowwise.cpp"));
    // A file no include names, declared in op.toml: it travels too.
    fs::create_directories(m_op / "tuning");
    kloop::platform::write_file_atomic(m_op / "tuning" / "table.txt", "A\n");
    kloop::platform::write_file_atomic(m_op / "op.toml",
                                       kloop::platform::read_file(m_op / "op.toml") + "\n[candidate]\nfiles = [\"tuning/\"]\n");
    git({"add", "-A"});
    git({"commit", "-q", "-m", "kernel with a header"});
    const auto r0 = init(5);
    ASSERT_EQ(r0.exit_code, 0) << r0.err << r0.out;
    EXPECT_EQ(kloop::platform::read_file(m_ws / "iter_v0" / "rms_tuning.hpp"), "#pragma once\n// tuning A\n");
    EXPECT_EQ(kloop::platform::read_file(m_ws / "iter_v0" / "tuning" / "table.txt"), "A\n");
    const auto v0 = nlohmann::json::parse(kloop::platform::read_file(m_ws / "iter_v0" / "benchmark_result.json")).at("iteration");
    EXPECT_EQ(v0.at("local_files"), nlohmann::json::array({"rms_tuning.hpp", "tuning/table.txt"}));

    kloop::platform::write_file_atomic(header, "#pragma once\n// tuning B\n");  // the local files alone change
    kloop::platform::write_file_atomic(m_op / "tuning" / "table.txt", "B\n");
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("retune through the header", "- header"));
    const auto r1 = run({"iterate", "--proposal", proposal.string()}, true);
    ASSERT_EQ(r1.exit_code, 0) << r1.err << r1.out;
    const auto v1 = nlohmann::json::parse(kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json")).at("iteration");
    EXPECT_NE(v1.at("status"), "rejected") << v1.dump(1);
    EXPECT_EQ(kloop::platform::read_file(m_ws / "iter_v1" / "rms_tuning.hpp"), "#pragma once\n// tuning B\n");
    EXPECT_EQ(v1.at("candidate_sha256"), v0.at("candidate_sha256"));
    EXPECT_NE(v1.at("sources_sha256"), v0.at("sources_sha256"));
    const auto committed = git({"show", "--name-only", "--format=", "HEAD"}).stdout_text;
    EXPECT_NE(committed.find("rmsnorm/rms_tuning.hpp"), std::string::npos) << committed;  // kernel.cpp: unchanged
    EXPECT_NE(committed.find("rmsnorm/tuning/table.txt"), std::string::npos) << committed;
    EXPECT_EQ(kloop::platform::read_file(m_ws / "iter_v1" / "tuning" / "table.txt"), "B\n");
    const auto contract = nlohmann::json::parse(kloop::platform::read_file(m_ws / "contract.json"));
    EXPECT_EQ(contract.at("baseline").at("local_files"), nlohmann::json::array({"rms_tuning.hpp", "tuning/table.txt"}));
    EXPECT_EQ(contract.at("baseline").at("sources_sha256"), v0.at("sources_sha256"));

    // A version rebuilds from its snapshot alone: the header beside it, not the one in the op.
    kloop::platform::write_file_atomic(header, "#error the snapshot must not read this\n");
    const auto rebuilt = run({"verify", m_op.string(), "--candidate", (m_ws / "iter_v1" / "kernel.cpp").string(), "--no-bench",
                              "--held-out", "0"});
    EXPECT_EQ(rebuilt.exit_code, 0) << rebuilt.err << rebuilt.out;
    // The final claim names each side's local files; report rebuilds both from their snapshots.
    const auto rep = run({"report"}, true);
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    const auto summary = kloop::platform::read_file(m_ws / "final_summary.md");
    EXPECT_NE(summary.find("with its local files `rms_tuning.hpp` `tuning/table.txt` (all sources sha256 " + v0.at("sources_sha256").get<std::string>()),
              std::string::npos) << summary;
    kloop::platform::write_file_atomic(header, "#pragma once\n// tuning B\n");

    kloop::platform::write_file_atomic(m_repo / "outside.hpp", "\n");
    kloop::platform::write_file_atomic(m_kernel, "#include \"../outside.hpp\"\n" + kloop::platform::read_file(m_kernel));
    const auto refused = run({"verify", m_op.string(), "--candidate", m_kernel.string(), "--no-bench", "--held-out", "0"});
    EXPECT_EQ(refused.exit_code, 2) << refused.out;
    EXPECT_NE(refused.err.find("#include \"../outside.hpp\""), std::string::npos) << refused.err;
}

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
    // A driver that enforces the block refuses the same strategy without a written reason, before
    // anything is staged (through the library: `kloop iterate` only warns).
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("drop w again", "- drop_scale"));
    const auto refused = refusal_of(proposal, {.enforce_blocked = true});
    EXPECT_NE(refused.find("(drop-scale) is BLOCKED"), std::string::npos) << refused;
    EXPECT_NE(refused.find("Blocked-override:"), std::string::npos) << refused;
    EXPECT_FALSE(fs::exists(m_ws / "iter_v2"));
    // `kloop iterate` warns, and keeps the reason the proposal gives.
    fs::copy_file(m_op / "broken/wrong_result.cpp", m_kernel, fs::copy_options::overwrite_existing);
    kloop::platform::write_file_atomic(proposal, proposal_text("drop w again", "- drop_scale") +  // same fingerprint, other spelling
                                                     "\nBlocked-override: the scale is folded into x now\n");
    auto b = run({"iterate", "--proposal", proposal.string()}, true);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.err.find("BLOCKED"), std::string::npos) << b.err;
    EXPECT_NE(b.err.find("retried with the proposal's reason: the scale is folded into x now"), std::string::npos) << b.err;
    EXPECT_NE(kloop::platform::read_file(m_ws / "iter_v2" / "iteration_summary.md").find("- Blocked override: the scale is folded"),
              std::string::npos);
    const auto st = status();
    EXPECT_EQ(st.at("next").at("step"), "stop_cap");
    auto c = iterate("versions/v1_rowwise.cpp", "one more", "- vectorization");
    EXPECT_EQ(c.exit_code, 2);
    EXPECT_NE(c.err.find("iteration cap (2) is reached"), std::string::npos) << c.err;
    EXPECT_FALSE(fs::exists(m_ws / "iter_v3"));
}

// Predictions through the CLI: registered in the staged proposal and the record, scored after
// the A/B (a range no timing misses, a shape the op lacks, a profile fact of a CPU op, a rejected
// candidate's claim), shown in iteration_summary.md, the OPT_LOG row, `status --json`, and the
// proposer's calibration in final_summary.md and final_result.json.
TEST_F(LoopTest, PredictionsAreRegisteredScoredAndCalibrated) {
    ASSERT_EQ(init(2).exit_code, 0);
    fs::copy_file(m_op / "versions/v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: one pass per row\nExpected: faster everywhere\n"
                                                 "Prediction: speedup 0.001-1000\n\n## Predictions\n"
                                                 "- fwd/no_such_shape speedup 1.1-1.3\n- profile dram_pct_of_peak 50-90\n\n"
                                                 "## Strategy tags\n- vectorization\n");
    const auto v1 = run({"iterate", "--proposal", proposal.string()}, true);
    ASSERT_EQ(v1.exit_code, 0) << v1.err << v1.out;
    EXPECT_NE(v1.out.find("prediction 'speedup 0.001-1000': hit"), std::string::npos) << v1.out;
    const auto staged = kloop::platform::read_file(m_ws / "iter_v1" / "optimization_proposal.md");
    EXPECT_NE(staged.find("## Registered predictions"), std::string::npos) << staged;
    EXPECT_NE(staged.find("line 3: overall speedup in [0.001, 1000]"), std::string::npos) << staged;
    const auto rec = nlohmann::json::parse(kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json"));
    const auto& preds = rec.at("iteration").at("predictions");
    ASSERT_EQ(preds.size(), 3u) << preds.dump(2);
    EXPECT_EQ(preds[0].at("outcome"), "hit") << preds.dump(2);
    EXPECT_DOUBLE_EQ(preds[0].at("off_by").get<double>(), 1.0);
    EXPECT_EQ(preds[1].at("outcome"), "unscored");
    EXPECT_NE(preds[1].at("reason").get<std::string>().find("no such shape: fwd/no_such_shape"), std::string::npos);
    EXPECT_EQ(preds[2].at("outcome"), "unscored");
    EXPECT_NE(preds[2].at("reason").get<std::string>().find("no profile (n/a"), std::string::npos);
    const auto summary = kloop::platform::read_file(m_ws / "iter_v1" / "iteration_summary.md");
    EXPECT_NE(summary.find("## Predictions (pred 1/1 hit, 2 unscored)"), std::string::npos) << summary;
    EXPECT_NE(summary.find("| 3 | speedup 0.001-1000 | hit |"), std::string::npos) << summary;
    EXPECT_NE(kloop::platform::read_file(m_ws / "OPT_LOG.md").find("faster everywhere (pred 1/1 hit, 2 unscored)"), std::string::npos);

    // A rejected candidate's claim is unscored; a proposal without one is measured with a warning.
    auto v2 = iterate("broken/wrong_result.cpp", "drop w", "- drop scale");
    ASSERT_EQ(v2.exit_code, 0) << v2.err << v2.out;
    EXPECT_NE(v2.err.find("no machine-readable prediction: it cannot be scored"), std::string::npos) << v2.err;
    const auto st = status();
    EXPECT_TRUE(st.at("last_predictions").empty());
    EXPECT_EQ(st.at("proposer_calibration").at("made"), 3);
    EXPECT_EQ(st.at("proposer_calibration").at("hits"), 1);

    const auto rep = run({"report", "--quiet"}, true);
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    const auto final_md = kloop::platform::read_file(m_ws / "final_summary.md");
    EXPECT_NE(final_md.find("## Proposer calibration"), std::string::npos) << final_md;
    EXPECT_NE(final_md.find("| speedup | 2 | 1 | 1 | 100 % |"), std::string::npos) << final_md;
    EXPECT_NE(final_md.find("| **all** | 3 | 1 | 1 | 100 % |"), std::string::npos) << final_md;
    const auto result = nlohmann::json::parse(kloop::platform::read_file(m_ws / "final_result.json"));
    EXPECT_EQ(result.at("proposer_calibration").at("scored"), 1);
}

// The unattended driver's rules, through the library: a proposal without a prediction is refused
// before anything is staged or measured when a prediction is required.
TEST_F(LoopTest, ARequiredPredictionIsRefusedBeforeAnythingIsStaged) {
    ASSERT_EQ(init(2).exit_code, 0);
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("no claim", "- vectorization"));
    const auto refused = refusal_of(proposal, {.require_prediction = true});
    EXPECT_NE(refused.find("no machine-readable prediction"), std::string::npos) << refused;
    EXPECT_FALSE(fs::exists(m_ws / "iter_v1"));
    for (const auto& e : fs::directory_iterator(m_ws))
        EXPECT_NE(e.path().filename().string().rfind(".staging-", 0), 0u) << e.path();
    EXPECT_EQ(kloop::platform::read_file(m_ws / "OPT_LOG.md").find("| v1 |"), std::string::npos);
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

namespace {

// The processes whose parent is this one (a subreaper: every orphaned descendant of a kloop it
// ran comes here), zombies reaped.
std::vector<std::pair<pid_t, std::string>> children_of_this_process() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::vector<std::pair<pid_t, std::string>> out;
    const pid_t self = ::getpid();
    for (const auto& e : fs::directory_iterator("/proc")) {
        const auto name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string line;
        if (!std::getline(in, line)) continue;
        const auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != self || state == 'Z') continue;
        out.emplace_back(std::stoi(name), line.substr(line.find('(') + 1, close - line.find('(') - 1));
    }
    return out;
}

// Names under `root` that are temporary files of atomic writes or staging directories.
std::vector<std::string> temporary_files_under(const fs::path& root) {
    std::vector<std::string> found;
    std::error_code ec;
    if (!fs::exists(root, ec)) return found;
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const auto name = it->path().filename().string();
        if (name == ".git") {
            it.disable_recursion_pending();
            continue;
        }
        if (name.find(".tmp-") != std::string::npos || name.rfind(".staging-", 0) == 0) found.push_back(it->path().string());
    }
    return found;
}

// A kloop started in the background (its pid: for the lock's message, or to kill it), its output
// dropped; with `own_group` it leads a process group of its own, as a shell job does.
pid_t start_kloop(const std::vector<std::string>& args, const fs::path& cwd,
                  const std::vector<std::pair<std::string, std::string>>& env, bool own_group = false) {
    std::vector<std::string> argv = {kloop_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (own_group) ::setpgid(0, 0);
        for (const auto& [n, v] : env) ::setenv(n.c_str(), v.c_str(), 1);
        if (::chdir(cwd.c_str()) != 0) ::_exit(126);
        const int null_fd = ::open("/dev/null", O_WRONLY);
        ::dup2(null_fd, 1);
        ::dup2(null_fd, 2);
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        ::execv(cargv[0], cargv.data());
        ::_exit(127);
    }
    if (own_group && pid > 0) ::setpgid(pid, pid);
    return pid;
}

int finish_kloop(pid_t pid) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

struct kill_tally {
    int by_pid = 0;
    int by_group = 0;
    int orphans = 0;
    int temporary_files = 0;
    int lost_or_corrupt = 0;
    int failed_next_commands = 0;
    [[nodiscard]] int kills() const { return by_pid + by_group; }
};

}  // namespace

class FaultInjectionTest : public LoopTest {
protected:
    kill_tally m_tally;

    // Runs kloop (a group leader, like a shell job) and SIGKILLs it: at `point` (KLOOP_FAULT_POINT)
    // or `delay` after its start; the pid alone or its whole group. Then checks, and counts, that
    // nothing it started outlives it.
    void killed_run(std::vector<std::string> args, const std::string& point, std::chrono::milliseconds delay,
                    bool group) {
        auto e = env(point);
        if (group) e.emplace_back("KLOOP_FAULT_GROUP", "1");
        const pid_t pid = start_kloop(args, m_repo, e, true);
        ASSERT_GT(pid, 0);
        if (point.empty()) {
            std::this_thread::sleep_for(delay);
            ::kill(group ? -pid : pid, SIGKILL);
        }
        (void)finish_kloop(pid);
        (group ? m_tally.by_group : m_tally.by_pid) += 1;
        // What kloop started dies with it (PR_SET_PDEATHSIG) or with its group: give the kernel a
        // moment to deliver, then whatever is left is an orphan.
        std::vector<std::pair<pid_t, std::string>> left;
        for (int i = 0; i < 30; ++i) {
            left = children_of_this_process();
            if (left.empty()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        for (const auto& [p, comm] : left) {
            ADD_FAILURE() << "left running after the kill: pid " << p << " (" << comm << ")";
            ++m_tally.orphans;
            ::kill(p, SIGKILL);
        }
    }

    void expect_no_temporary_files(const fs::path& root) {
        for (const auto& f : temporary_files_under(root)) {
            ADD_FAILURE() << "temporary file left after the next command: " << f;
            ++m_tally.temporary_files;
        }
    }

    // After a kill of a command on the main workspace: the next command works, the iteration is
    // whole or absent, its commit and memory row are there, nothing temporary is left.
    int check_main_workspace(int before, std::size_t rows_minus_iterations) {
        const auto st = run({"status", "--json", "--workspace", m_ws.string()});
        if (st.exit_code != 0 || !st.record.is_object()) {
            ADD_FAILURE() << "status after the kill: exit " << st.exit_code << " " << st.err;
            ++m_tally.failed_next_commands;
            return before;
        }
        const int now = st.record.at("iterations").get<int>();
        if (now != before && now != before + 1) {
            ADD_FAILURE() << "iterations went from " << before << " to " << now;
            ++m_tally.lost_or_corrupt;
        }
        const bool failed_before = HasFailure();
        expect_consistent(now);
        const auto log = git({"log", "--format=%s"}).stdout_text;
        if (now > before) {  // also one a later command recorded because its kloop died evaluating it
            const auto rec = nlohmann::json::parse(
                kloop::platform::read_file(m_ws / ("iter_v" + std::to_string(now)) / "benchmark_result.json"));
            EXPECT_TRUE(rec.at("iteration").at("git").at("committed").get<bool>()) << rec.at("iteration").at("git").dump();
            EXPECT_EQ(git({"status", "--porcelain", "--", m_kernel.string()}).stdout_text.empty(),
                      kloop::platform::read_file(m_kernel) ==
                          kloop::platform::read_file(m_ws / ("iter_v" + std::to_string(now)) / "kernel.cpp"));
        }
        for (int n = 1; n <= now; ++n)
            EXPECT_NE(log.find("kloop rmsnorm v" + std::to_string(n) + " ("), std::string::npos) << "no commit of v" << n;
        kloop::loop::strategy_memory memory(m_memory);
        EXPECT_EQ(memory.count_rows(), static_cast<std::size_t>(now) + rows_minus_iterations);
        if (!failed_before && HasFailure()) ++m_tally.lost_or_corrupt;  // counts the first such kill
        expect_no_temporary_files(m_repo);
        return now;
    }

    template <class F>
    std::chrono::milliseconds timed(F&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    }
};

TEST_F(FaultInjectionTest, FiftyKillsByPidAndGroupLoseNothingAndLeaveNothingRunning) {
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    const auto t_start = std::chrono::steady_clock::now();
    std::vector<std::string> init_args = {"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", "200",
                                          "--held-out", "0"};
    for (const auto& a : quick_bench()) init_args.push_back(a);
    auto with_workspace = [](std::vector<std::string> a, const fs::path& ws) {
        a.insert(a.end(), {"--workspace", ws.string()});
        return a;
    };

    // The main loop, uninterrupted: its init's duration spreads the init kills below.
    kloop_run first;
    const auto init_ms = timed([&] { first = run(with_workspace(init_args, m_ws)); });
    ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
    std::size_t rows_minus_iterations = kloop::loop::strategy_memory(m_memory).count_rows();

    // init: killed before its workspace exists — at its named points before the rename and at
    // seven moments of the first half of its run — into one workspace, each kill's debris met by
    // the next init there, the last of which completes it; and killed after the rename, by pid
    // and by group, each into a workspace of its own, which the next init finds complete (exit
    // 2) and status reads.
    const auto killed_ws = m_repo / "killed-inits" / "ws";
    auto init_kill = [&](const fs::path& ws, const std::string& point, std::chrono::milliseconds delay, bool group) {
        SCOPED_TRACE("init killed " + (point.empty() ? "after " + std::to_string(delay.count()) + " ms" : "at " + point) +
                     (group ? ", by group" : ", by pid"));
        killed_run(with_workspace(init_args, ws), point, delay, group);
    };
    for (const char* point : {"init.after_baseline", "init.before_rename"})
        for (bool group : {false, true}) init_kill(killed_ws, point, {}, group);
    for (int i = 0; i < 7; ++i) init_kill(killed_ws, "", init_ms * (i + 1) / 16, i % 2 == 1);
    {
        const auto done = run(with_workspace(init_args, killed_ws));
        EXPECT_EQ(done.exit_code, 0) << "the init after the kills: " << done.err;
        if (done.exit_code != 0) ++m_tally.failed_next_commands;
        expect_no_temporary_files(killed_ws);
    }
    for (bool group : {false, true}) {
        const auto ws = m_repo / "killed-inits" / (group ? "after-rename-group" : "after-rename-pid");
        init_kill(ws, "init.after_rename", {}, group);
        const auto again = run(with_workspace(init_args, ws));
        const auto st = run({"status", "--json", "--workspace", ws.string()});
        if ((again.exit_code != 0 && again.exit_code != 2) || st.exit_code != 0) {
            ADD_FAILURE() << "after the kill: init exit " << again.exit_code << " " << again.err << "; status exit "
                          << st.exit_code << " " << st.err;
            ++m_tally.failed_next_commands;
        }
        expect_no_temporary_files(ws);
    }

    // iterate: a rejected candidate (quick) killed at every named point, by pid and by group...
    int iterations = 0;
    rows_minus_iterations = kloop::loop::strategy_memory(m_memory).count_rows();  // with the other loops' v0s
    const auto proposal = m_dir.path() / "p.md";
    for (const char* point : {"iterate.staged", "iterate.compared", "iterate.profiled", "iterate.committed", "iterate.written",
                              "iterate.renamed", "iterate.logged", "iterate.remembered"})
        for (bool group : {false, true}) {
            SCOPED_TRACE(std::string("iterate killed at ") + point + (group ? ", by group" : ", by pid"));
            fs::copy_file(m_op / "broken" / "wrong_result.cpp", m_kernel, fs::copy_options::overwrite_existing);
            kloop::platform::write_file_atomic(proposal, proposal_text(std::string("killed at ") + point, "- drop scale"));
            std::vector<std::string> a = {"iterate", "--proposal", proposal.string(), "--workspace", m_ws.string(),
                                          "--held-out", "0"};
            for (const auto& q : quick_bench()) a.push_back(q);
            killed_run(a, point, {}, group);
            iterations = check_main_workspace(iterations, rows_minus_iterations);
        }
    // ... and an honest one at twelve moments spread over a whole iteration (build, gate, A/B,
    // classification, records, git, memory).
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    kloop::platform::write_file_atomic(proposal, proposal_text("rows", "- vectorization"));
    std::vector<std::string> it_args = {"iterate", "--proposal", proposal.string(), "--workspace", m_ws.string(),
                                        "--held-out", "0"};
    for (const auto& q : quick_bench()) it_args.push_back(q);
    kloop_run whole;
    const auto iterate_ms = timed([&] { whole = run(it_args); });
    ASSERT_EQ(whole.exit_code, 0) << whole.err << whole.out;
    iterations = check_main_workspace(iterations, rows_minus_iterations);
    ASSERT_EQ(iterations, status().at("iterations").get<int>());
    // `n` kills of `args` at the middles of n equal slices of `whole_ms`, alternately by pid and by
    // group; `after` checks what is left after each.
    auto spread_kills = [&](const std::string& verb, const std::vector<std::string>& args, std::chrono::milliseconds whole_ms,
                            int n, const std::function<void()>& after) {
        for (int i = 0; i < n; ++i) {
            const auto delay = whole_ms * (2 * i + 1) / (2 * n);
            SCOPED_TRACE(verb + " killed after " + std::to_string(delay.count()) + " ms");
            killed_run(args, "", delay, i % 2 == 1);
            after();
        }
    };
    const auto check_loop = [&] { iterations = check_main_workspace(iterations, rows_minus_iterations); };
    spread_kills("iterate", it_args, iterate_ms, 10, check_loop);

    // report: at its named point and at four moments of its run; a whole report still works after.
    std::vector<std::string> report_args = {"report", "--quiet", "--workspace", m_ws.string(), "--held-out", "0"};
    for (const auto& q : quick_bench()) report_args.push_back(q);
    for (bool group : {false, true}) {
        SCOPED_TRACE(std::string("report killed at report.compared") + (group ? ", by group" : ", by pid"));
        killed_run(report_args, "report.compared", {}, group);
        check_loop();
    }
    kloop_run rep;
    const auto report_ms = timed([&] { rep = run(report_args); });
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    spread_kills("report", report_args, report_ms, 3, check_loop);

    // verify (a run of a candidate outside the loop): at six moments; nothing may be left running
    // and the next verify works.
    std::vector<std::string> verify_args = {"verify", m_op.string(), "--candidate",
                                            (m_op / "versions" / "v1_rowwise.cpp").string(), "--held-out", "0"};
    for (const auto& q : quick_bench()) verify_args.push_back(q);
    kloop_run ver;
    const auto verify_ms = timed([&] { ver = run(verify_args); });
    ASSERT_EQ(ver.exit_code, 0) << ver.err << ver.out;
    spread_kills("verify", verify_args, verify_ms, 6, [] {});  // killed_run checks what is left running
    ver = run(verify_args);
    EXPECT_EQ(ver.exit_code, 0) << ver.err << ver.out;

    // The loop goes on: best, report and one more iteration, then nothing temporary anywhere.
    EXPECT_EQ(run({"best", "--json", "--workspace", m_ws.string()}).exit_code, 0);
    fs::copy_file(m_op / "versions" / "v2_streaming.cpp", m_kernel, fs::copy_options::overwrite_existing);
    kloop::platform::write_file_atomic(proposal, proposal_text("streaming", "- streaming"));
    const auto last = run(it_args);
    EXPECT_EQ(last.exit_code, 0) << last.err << last.out;
    iterations = check_main_workspace(iterations, rows_minus_iterations);
    EXPECT_EQ(run(report_args).exit_code, 0);
    expect_no_temporary_files(m_repo);

    std::printf("uninterrupted: init %lld ms, iterate %lld ms, report %lld ms, verify %lld ms\n",
                static_cast<long long>(init_ms.count()), static_cast<long long>(iterate_ms.count()),
                static_cast<long long>(report_ms.count()), static_cast<long long>(verify_ms.count()));
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    EXPECT_GE(m_tally.kills(), 50);
    std::printf("fault injection: %d kills (%d by pid, %d by process group) of init, iterate, report and verify; "
                "lost or corrupt iterations %d, orphans %d, temporary files left %d, failed next commands %d; "
                "%d iterations recorded; %.1f s\n",
                m_tally.kills(), m_tally.by_pid, m_tally.by_group, m_tally.lost_or_corrupt, m_tally.orphans,
                m_tally.temporary_files, m_tally.failed_next_commands, iterations, secs);
}

// Two iterates on one workspace: the second is refused at once, naming the first's pid. Loops of
// two repositories sharing one memory database, iterating at the same time: no row is lost.
TEST_F(LoopTest, ConcurrentCommandsAreRefusedOrLoseNothing) {
    ASSERT_EQ(init(10).exit_code, 0);
    const auto proposal = m_dir.path() / "p.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("rows", "- vectorization"));
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    std::vector<std::string> it = {"iterate", "--proposal", proposal.string(), "--held-out", "0"};
    for (const auto& q : quick_bench()) it.push_back(q);

    const pid_t first = start_kloop(it, m_repo, env());
    // The first holds the workspace lock from its start; wait until it does (its staging appears).
    bool staged = false;
    for (int i = 0; i < 300 && !staged; ++i) {
        for (const auto& e : fs::directory_iterator(m_ws))
            staged = staged || e.path().filename().string().rfind(".staging-", 0) == 0;
        if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(staged) << "the first iterate never staged its iteration";
    const auto t0 = std::chrono::steady_clock::now();
    const auto second = run(it);
    const auto refused_after = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(second.exit_code, 2) << second.err << second.out;
    EXPECT_NE(second.err.find("(pid " + std::to_string(first) + ")"), std::string::npos) << second.err;
    EXPECT_LT(refused_after, std::chrono::seconds(10));  // at once: it does not wait for the lock
    EXPECT_EQ(finish_kloop(first), 0);
    EXPECT_EQ(status().at("iterations"), 1);

    // A second repository, its own loop, the same memory database.
    const fs::path repo2 = m_dir.path() / "repo2";
    fs::copy(m_repo, repo2, fs::copy_options::recursive);
    fs::remove_all(repo2 / "profile");
    const fs::path kernel2 = repo2 / "rmsnorm" / "kernel.cpp";
    fs::copy_file(m_op / "versions" / "v0_naive.cpp", kernel2, fs::copy_options::overwrite_existing);
    std::vector<std::string> init2 = {"init", (repo2 / "rmsnorm").string(), "--candidate", kernel2.string(),
                                      "--max-iterations", "10", "--held-out", "0"};
    for (const auto& q : quick_bench()) init2.push_back(q);
    ASSERT_EQ(finish_kloop(start_kloop(init2, repo2, env())), 0);
    const auto rows_before = kloop::loop::strategy_memory(m_memory).count_rows();
    fs::copy_file(m_op / "versions" / "v2_streaming.cpp", m_kernel, fs::copy_options::overwrite_existing);
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", kernel2, fs::copy_options::overwrite_existing);
    const pid_t a = start_kloop(it, m_repo, env());
    const pid_t b = start_kloop(it, repo2, env());
    EXPECT_EQ(finish_kloop(a), 0);
    EXPECT_EQ(finish_kloop(b), 0);
    EXPECT_EQ(kloop::loop::strategy_memory(m_memory).count_rows(), rows_before + 2);
    EXPECT_EQ(status().at("iterations"), 2);
}

// A process spinning beside the A/B: with --require-quiet, whatever the verdict, v1 is never
// promoted from it; the record keeps the load that says why. Runs alone (ctest RUN_SERIAL).
TEST_F(LoopTest, RequireQuietNeverPromotesAVerdictFromABusyMachine) {
    const auto i = init(3);
    ASSERT_EQ(i.exit_code, 0) << i.err << i.out;
    fs::copy_file(m_op / "versions" / "v1_rowwise.cpp", m_kernel, fs::copy_options::overwrite_existing);
    const auto proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, proposal_text("one pass per row, 32 lanes", "- vectorization"));
    kloop::testing::kloop_run v1;
    {
        const kloop::testing::spinners busy(1);
        v1 = run({"iterate", "--proposal", proposal.string(), "--require-quiet"}, true);
    }
    ASSERT_EQ(v1.exit_code, 0) << v1.err << v1.out;
    EXPECT_EQ(v1.out.find("v1: positive"), std::string::npos) << v1.out;
    const auto rec = nlohmann::json::parse(kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json"));
    if (rec.at("ab").at("timed").get<bool>()) {  // both gates green: the A/B timed beside the spinner
        EXPECT_TRUE(rec.at("ab").at("host_load").at("busy").get<bool>()) << rec.at("ab").at("host_load").dump();
        EXPECT_EQ(rec.at("ab").at("warnings").at(0).at("code"), "busy_machine");
    }
    const auto& it = rec.at("iteration");
    if (it.at("status") == "rejected" && it.at("reason").get<std::string>().find("busy") != std::string::npos) {
        EXPECT_NE(it.at("reason").get<std::string>().find("--require-quiet"), std::string::npos) << it.dump(1);
    }
}
