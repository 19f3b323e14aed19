// Unit under test: black-box ops benchmarked through an FLA-style registry ([bench] registry,
// kloop_worker.fla_registry), end to end through the real kloop binary on
// tests/fixtures/fla_like_repo (numpy): the registry bench with no adapter, both sides of an A/B
// timed in one process, the fallback to separate processes with its reason, a run voided by a
// side that rebinds the other's code, and the base's green gate reused in the loop only while
// the repository's bytes are the same.
#include <gtest/gtest.h>

#include <filesystem>

#include "blackbox_repo_test.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path fixture_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "fixtures" / "fla_like_repo";
const fs::path candidates_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "fixtures" / "fla_like_candidates";

class FlaRegistryTest : public kloop::testing::blackbox_repo_test {
protected:
    [[nodiscard]] fs::path fixture() const override { return fixture_dir; }
    [[nodiscard]] fs::path candidates() const override { return candidates_dir; }

    [[nodiscard]] fs::path kernel() const { return m_repo / "flalike" / "ops" / "scale" / "chunk.py"; }

    // `kloop verify --base v0 --candidate FILE --json`: an A/B of the fixture's v0 against FILE.
    kloop::testing::kloop_run ab(const std::string& candidate) {
        const fs::path base = m_dir.path() / "v0.py";
        fs::copy_file(kernel(), base, fs::copy_options::overwrite_existing);
        return verify(candidate, {"--base", base.string()});
    }

    void write_proposal(const std::string& direction) const {
        kloop::platform::write_file_atomic(m_dir.path() / "proposal.md", "Direction: " + direction +
                                                                             "\nExpected: faster\n\n## Strategy tags\n- vectorization\n");
    }
};

TEST_F(FlaRegistryTest, VerifyTimesTheRegistrysShapesWithNoAdapter) {
    const auto r = verify(cand("fast.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& j = r.record;
    EXPECT_EQ(j.at("status"), "passed");
    const auto& bench = j.at("blackbox").at("bench");
    ASSERT_EQ(bench.size(), 2u);  // rounds = 2
    const auto argv = bench.at(0).at("argv").dump();
    EXPECT_NE(argv.find("kloop_worker.fla_registry"), std::string::npos) << argv;
    EXPECT_NE(argv.find("chunk_scale"), std::string::npos) << argv;
    ASSERT_EQ(j.at("bench").at("shapes").size(), 2u);
    for (const auto& s : j.at("bench").at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_EQ(s.at("mode"), "fwd");
        EXPECT_GE(s.at("n").get<int>(), 10) << s.dump();  // 5 samples or more per round, 2 rounds
    }
}

TEST_F(FlaRegistryTest, BothSidesAreTimedInOneProcessAndASlowerCandidateLoses) {
    const auto r = ab(cand("slow.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& cand_bb = r.record.at("compare").at("evaluations").at("candidate").at("blackbox");
    EXPECT_NE(cand_bb.at("ab_timing").get<std::string>().find("one process"), std::string::npos) << cand_bb.dump();
    EXPECT_EQ(cand_bb.at("ab_timing_fallback"), "");
    // One process per round times both sides: each side's record names the same command runs.
    ASSERT_EQ(cand_bb.at("bench").size(), 2u);
    const auto env = cand_bb.at("bench").at(0).at("env").dump();
    EXPECT_NE(env.find("KLOOP_BENCH_SIDES"), std::string::npos) << env;
    const auto& shapes = r.record.at("compare").at("shapes");
    ASSERT_EQ(shapes.size(), 2u);
    for (const auto& s : shapes) EXPECT_EQ(s.at("verdict"), "SLOWER") << s.dump();
    // The bench got the A/B's early-verdict settings, and a 3 ms against a sub-millisecond call
    // settles at a look: the record says so, per round. A busy machine can end a round by its
    // time cap before the first look (64 pairs): then there was no look to settle at, and the
    // test says so instead of failing.
    EXPECT_NE(env.find("KLOOP_BENCH_EARLY_VERDICT"), std::string::npos) << env;
    for (const auto& s : shapes) {
        const int per_round = s.at("candidate").at("n").get<int>() / 2;
        if (s.at("early_verdict").is_null() && per_round < 64 &&
            s.at("candidate_stop_reason").get<std::string>().find("time_cap") != std::string::npos) {
            if (const auto busy = kloop::testing::machine_too_busy_for_timing()) {
                std::cerr << "note: " << s.at("shape").get<std::string>() << ": the rounds hit their time cap at about "
                          << per_round << " pairs, before the early verdict's first look; " << *busy << "\n";
                continue;
            }
        }
        EXPECT_EQ(s.at("early_verdict"), "SLOWER") << s.dump();
        EXPECT_NE(s.at("candidate_stop_reason").get<std::string>().find("early_verdict SLOWER; early_verdict SLOWER"),
                  std::string::npos) << s.dump();
    }
}

TEST_F(FlaRegistryTest, NoiseSaysHowEachRunWasTimed) {
    // Short runs: a sub-millisecond call gathers tens of thousands of samples in seconds.
    const std::vector<std::string> quick{"--runs", "2", "--min-time", "0.02", "--max-time", "0.1"};
    auto args = std::vector<std::string>{"noise", m_repo.string(), "--candidate", kernel().string()};
    args.insert(args.end(), quick.begin(), quick.end());
    auto r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("run   1/2: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("| one process"), std::string::npos) << r.out;
    args = {"noise", m_repo.string(), "--candidate", cand("busy_thread_at_import.py")};
    args.insert(args.end(), quick.begin(), quick.end());
    r = run(args);
    EXPECT_NE(r.out.find("| separate processes: importing side"), std::string::npos) << r.out << r.err;
    // The base's own import fell back in run 1: run 2 does not try one process again, and says so.
    const auto run2 = r.out.find("run   2/2: ");
    ASSERT_NE(run2, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("remembered from an earlier A/B of this base", run2), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("remembered from an earlier A/B of this base"), r.out.find("remembered from an earlier A/B of this base", run2))
        << "run 1 tried one process itself: " << r.out;
}

TEST_F(FlaRegistryTest, ARoundTimeBoundsEveryBenchRunAndNoEarlyVerdictWithoutAnAB) {
    auto text = kloop::platform::read_file(m_repo / "op.toml");
    text.replace(text.find("rounds = 2"), 10, "rounds = 2\nround_time_s = 0.5");
    kloop::platform::write_file_atomic(m_repo / "op.toml", text);
    const auto r = verify(cand("fast.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& bench = r.record.at("blackbox").at("bench");
    ASSERT_EQ(bench.size(), 2u);
    const auto env = bench.at(0).at("env").dump();
    EXPECT_EQ(bench.at(0).at("env").value("KLOOP_BENCH_ROUND_TIME_S", ""), "0.5") << env;
    EXPECT_EQ(env.find("KLOOP_BENCH_EARLY_VERDICT"), std::string::npos) << "one side: nothing to settle\n" << env;
    for (const auto& s : r.record.at("bench").at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_EQ(s.at("stop_reason").get<std::string>().find("early_verdict"), std::string::npos) << s.dump();
    }
}

TEST_F(FlaRegistryTest, AnIdleThreadStartedAtImportKeepsTheSidesInOneProcess) {
    const auto r = ab(cand("thread_at_import.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& cand_bb = r.record.at("compare").at("evaluations").at("candidate").at("blackbox");
    EXPECT_EQ(cand_bb.at("ab_timing").get<std::string>().rfind("one process", 0), 0u) << cand_bb.dump();
    // Rounds alternate which side is imported first; the candidate's thread is named either way.
    EXPECT_NE(cand_bb.at("ab_timing").get<std::string>().find("threads left idle, none ran: "), std::string::npos) << cand_bb.dump();
    EXPECT_NE(cand_bb.at("ab_timing").get<std::string>().find(" x1 (importing side 'candidate')"), std::string::npos) << cand_bb.dump();
    EXPECT_EQ(cand_bb.at("ab_timing_fallback").get<std::string>(), "") << cand_bb.dump();
    EXPECT_TRUE(r.record.at("compare").at("ok").get<bool>()) << r.record.at("compare").at("reason");
}

TEST_F(FlaRegistryTest, AThreadThatKeepsRunningAfterTheImportTimesTheSidesApartAndSaysWhy) {
    const auto r = ab(cand("busy_thread_at_import.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& cand_bb = r.record.at("compare").at("evaluations").at("candidate").at("blackbox");
    EXPECT_NE(cand_bb.at("ab_timing").get<std::string>().find("separate processes"), std::string::npos) << cand_bb.dump();
    EXPECT_NE(cand_bb.at("ab_timing_fallback").get<std::string>().find("still running"), std::string::npos) << cand_bb.dump();
    // Separate processes: each side ran its own bench command per round.
    EXPECT_EQ(cand_bb.at("bench").size(), 2u);
    EXPECT_EQ(r.record.at("compare").at("evaluations").at("base").at("blackbox").at("bench").size(), 2u);
    EXPECT_TRUE(r.record.at("compare").at("ok").get<bool>()) << r.record.at("compare").at("reason");
}

TEST_F(FlaRegistryTest, ACandidateThatRebindsTheBasesCodeVoidsTheComparison) {
    const auto r = ab(cand("tamper_base.py"));
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_FALSE(r.record.at("compare").at("ok").get<bool>());
    const std::string reason = r.record.at("compare").at("reason");
    EXPECT_NE(reason.find("void"), std::string::npos) << reason;
    EXPECT_NE(reason.find("candidate"), std::string::npos) << reason;
}

TEST_F(FlaRegistryTest, TheLoopReusesTheBasesGreenGateOnlyOnTheSameBytes) {
    auto r = run({"init", m_repo.string(), "--candidate", kernel().string(), "--max-iterations", "6"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path ws = m_repo / "profile" / "chunk_scale-opt";
    auto base_gate = [&](int v) {
        const auto rec = nlohmann::json::parse(kloop::platform::read_file(ws / ("iter_v" + std::to_string(v)) / "benchmark_result.json"));
        return rec.at("ab").at("evaluations").at("base").at("blackbox").at("gate").at(0);
    };

    // v1 against v0: v0's gate passed at init, on these bytes: reused.
    write_proposal("vectorise");
    fs::copy_file(candidates_dir / "fast.py", kernel(), fs::copy_options::overwrite_existing);
    r = run({"iterate", "--proposal", (m_dir.path() / "proposal.md").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ASSERT_NE(r.out.find("v1: positive"), std::string::npos) << r.out;
    EXPECT_TRUE(base_gate(1).at("reused").is_object()) << base_gate(1).dump();
    EXPECT_NE(r.out.find("reused"), std::string::npos) << r.out;

    // v2 against v1 (promoted): v1's own gate, run as the candidate, stands for the base.
    write_proposal("sleep");
    fs::copy_file(candidates_dir / "slow.py", kernel(), fs::copy_options::overwrite_existing);
    r = run({"iterate", "--proposal", (m_dir.path() / "proposal.md").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(base_gate(2).at("reused").is_object()) << base_gate(2).dump();

    // A file the gate could import changes: the base's bytes differ, the gate runs again.
    kloop::platform::write_file_atomic(m_repo / "flalike" / "ops" / "helper.py", "X = 1\n");
    write_proposal("sleep again");
    r = run({"iterate", "--proposal", (m_dir.path() / "proposal.md").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto g3 = base_gate(3);
    EXPECT_TRUE(g3.at("reused").is_null()) << g3.dump();
    EXPECT_GT(g3.at("wall_s").get<double>(), 0.0);
}

// A base whose own import starts a thread that keeps running: the first iteration's A/B tries one process and falls
// back; the loop remembers it for that base, so the next iteration's A/B (the same base: the
// candidate was not kept) goes straight to separate processes and says why.
TEST_F(FlaRegistryTest, TheLoopRemembersThatItsBaseCannotShareAProcess) {
    fs::copy_file(candidates_dir / "busy_thread_at_import.py", kernel(), fs::copy_options::overwrite_existing);
    auto r = run({"init", m_repo.string(), "--candidate", kernel().string(), "--max-iterations", "6"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path ws = m_repo / "profile" / "chunk_scale-opt";
    auto fallback_of = [&](int v) {
        const auto rec = nlohmann::json::parse(kloop::platform::read_file(ws / ("iter_v" + std::to_string(v)) / "benchmark_result.json"));
        return rec.at("ab").at("evaluations").at("candidate").at("blackbox").at("ab_timing_fallback").get<std::string>();
    };
    for (int v : {1, 2}) {
        write_proposal("sleep " + std::to_string(v));
        fs::copy_file(candidates_dir / "slow.py", kernel(), fs::copy_options::overwrite_existing);
        r = run({"iterate", "--proposal", (m_dir.path() / "proposal.md").string()});
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
        ASSERT_NE(r.out.find("v" + std::to_string(v) + ": negative"), std::string::npos) << r.out;
    }
    EXPECT_EQ(fallback_of(1).rfind("importing side 'base' started 1 thread(s)", 0), 0u) << fallback_of(1);
    EXPECT_EQ(fallback_of(1).find("remembered"), std::string::npos) << fallback_of(1);
    EXPECT_EQ(fallback_of(2).rfind("importing side 'base' started 1 thread(s)", 0), 0u) << fallback_of(2);
    EXPECT_NE(fallback_of(2).find("remembered from an earlier A/B of this base"), std::string::npos) << fallback_of(2);

    // A memo another kloop build wrote (its first line names that build) is not taken: that
    // build's bench module may have failed where this one holds both sides. One process is tried.
    int memos = 0;
    for (const auto& e : fs::recursive_directory_iterator(m_repo / "profile"))
        if (e.is_regular_file() && e.path().parent_path().filename() == "ab-fallbacks") {
            auto text = kloop::platform::read_file(e.path());
            ASSERT_EQ(text.rfind("kloop ", 0), 0u) << text;
            kloop::platform::write_file_atomic(e.path(), "kloop 0.0.0 000000000000" + text.substr(text.find('\n')));
            ++memos;
        }
    ASSERT_GE(memos, 1);
    write_proposal("sleep 3");
    fs::copy_file(candidates_dir / "slow.py", kernel(), fs::copy_options::overwrite_existing);
    r = run({"iterate", "--proposal", (m_dir.path() / "proposal.md").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(fallback_of(3).rfind("importing side 'base' started 1 thread(s)", 0), 0u) << fallback_of(3);
    EXPECT_EQ(fallback_of(3).find("remembered"), std::string::npos) << fallback_of(3);
}

TEST_F(FlaRegistryTest, NewWritesASpecFromTheRegistryThatVerifies) {
    const fs::path spec = m_repo / "kloop" / "chunk_scale" / "op.toml";
    const std::vector<std::string> args{"new", "--from-fla", "chunk_scale", "--repo", m_repo.string(),
                                        "--python", kloop::testing::blackbox_python};
    auto r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(spec.string()), std::string::npos) << r.out;
    const auto text = kloop::platform::read_file(spec);
    for (const char* want : {"root = \"../..\"", "target = \"flalike/ops/scale/chunk.py\"", "\"tests/ops/test_scale.py\"",
                             "\"benchmarks/ops/registry.py\"", "\"flalike/ops/scale/naive.py\"",
                             "registry = { op = \"chunk_scale\"", "\"fwd/B1_T64_H2_D16\"", "\"fwd/B2_T32_H4_D8\"",
                             "round_time_s = 5"})
        EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
    EXPECT_EQ(text.find("B1_T16_H2_D32"), std::string::npos) << "a shape the op's dim_constraints rule out\n" << text;

    r = verify(cand("fast.py"));  // the fixture's own op.toml still works beside it
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = run({"verify", spec.parent_path().string(), "--candidate", cand("fast.py"), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.record.at("status"), "passed");

    r = run(args);  // it exists now
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;

    r = run({"new", "--from-fla", "chunk_nope", "--repo", m_repo.string(), "--python", kloop::testing::blackbox_python});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("chunk_scale"), std::string::npos) << "the registered ops are listed: " << r.err;
}

}  // namespace
