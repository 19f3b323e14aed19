// Unit under test: black-box mode end to end through the real kloop binary, on the fixture
// repository tests/fixtures/blackbox_repo (softplus in numpy, gated by its own pytest file, timed by
// its own bench.py): a green verify, a red one, an empty --gate-k selection, refused weakening
// variables (exit 2), a frozen file edited (exit 5), the user's files unchanged after a crash and a
// hang, and `kloop init` + `iterate` + `best` + `report` writing log rows and commits.
//
// Needs a Python with pytest and numpy: KLOOP_BLACKBOX_TEST_PYTHON, found by
// tests/integration/CMakeLists.txt; the tests skip without one.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "blackbox_repo_test.hpp"
#include "kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
using kloop::testing::kloop_run;
using kloop::testing::replace_all;
using kloop::testing::tree_hashes;

namespace {

const fs::path fixture_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "fixtures" / "blackbox_repo";
const fs::path candidates_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "fixtures" / "blackbox_candidates";

class BlackboxTest : public kloop::testing::blackbox_repo_test {
protected:
    [[nodiscard]] fs::path fixture() const override { return fixture_dir; }
    [[nodiscard]] fs::path candidates() const override { return candidates_dir; }
};

TEST_F(BlackboxTest, GreenGateThenBench) {
    const auto r = verify(cand("good.py"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& j = r.record;
    EXPECT_EQ(j.at("status"), "passed");
    EXPECT_EQ(j.at("gate").at("status"), "pass");
    EXPECT_EQ(j.at("gate").at("partial"), false);
    const auto& g = j.at("blackbox").at("gate").at(0);
    EXPECT_EQ(g.at("exit_code"), 0);
    EXPECT_GE(g.at("summary").at("passed").get<int>(), 10);
    EXPECT_EQ(g.at("summary").at("failed"), 0);
    EXPECT_EQ(g.at("argv").at(0), kloop::testing::blackbox_python);
    EXPECT_TRUE(g.at("env").contains("OMP_NUM_THREADS"));
    EXPECT_FALSE(g.at("env").contains("KLOOP_HOME"));  // a clean environment, not kloop's
    EXPECT_EQ(j.at("bench").at("status"), "pass");
    ASSERT_EQ(j.at("bench").at("shapes").size(), 2u);
    for (const auto& s : j.at("bench").at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_GE(s.at("n").get<int>(), 10);  // two bench runs of >= 5 samples, pooled
        EXPECT_GT(s.at("median_ms").get<double>(), 0);
    }
    EXPECT_EQ(j.at("blackbox").at("bench").size(), 2u);

    const auto text = run({"verify", m_repo.string(), "--candidate", cand("good.py"), "--no-bench"});
    EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
    EXPECT_NE(text.out.find("gate: PASS"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("passed"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("env: "), std::string::npos) << text.out;
}

TEST_F(BlackboxTest, WrongCandidateIsRedAndNeverTimed) {
    const auto r = verify(cand("wrong.py"));
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    const auto& j = r.record;
    ASSERT_TRUE(j.is_object()) << r.out << r.err;
    EXPECT_EQ(j.at("status"), "gate_failed");
    EXPECT_EQ(j.at("bench").at("ran"), false);
    const auto& s = j.at("blackbox").at("gate").at(0).at("summary");
    EXPECT_GT(s.at("failed").get<int>(), 0);
    EXPECT_FALSE(s.at("failures").empty());
    EXPECT_NE(j.at("reason").get<std::string>().find("exit 1"), std::string::npos) << j.at("reason");
    EXPECT_EQ(j.at("blackbox").at("gate").at(0).at("exit_code"), 1);
}

TEST_F(BlackboxTest, EmptySelectionIsRed) {
    const auto r = verify(cand("good.py"), {"--gate-k", "no_such_test_name"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    const auto& j = r.record;
    EXPECT_EQ(j.at("gate").at("partial"), true);
    EXPECT_EQ(j.at("blackbox").at("gate").at(0).at("exit_code"), 5);
    EXPECT_NE(j.at("reason").get<std::string>().find("collected no tests (exit 5)"), std::string::npos) << j.at("reason");
}

TEST_F(BlackboxTest, GateKSelectsAndMarksPartial) {
    const auto r = verify(cand("good.py"), {"--gate-k", "n64_d256", "--no-bench"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto& g = r.record.at("blackbox").at("gate").at(0);
    EXPECT_EQ(g.at("summary").at("passed"), 2);
    EXPECT_GT(g.at("summary").at("deselected").get<int>(), 0);
    EXPECT_EQ(r.record.at("gate").at("partial"), true);
    const auto& argv = g.at("argv");
    EXPECT_EQ(argv.at(argv.size() - 2), "-k");
}

TEST_F(BlackboxTest, WeakeningVariablesAreRefused) {
    auto r = verify(cand("good.py"), {}, {{"FLA_CI_ENV", "1"}});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("FLA_CI_ENV"), std::string::npos) << r.err;
    r = verify(cand("good.py"), {}, {{"SKIP_TEST_FOO", "1"}});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("SKIP_TEST_FOO"), std::string::npos) << r.err;
    // in the spec's env: caught when the spec is read, with the line
    set_spec(replace_all(read("op.toml"), "env = { OMP_NUM_THREADS = \"1\" }\ntimeout", "env = { SKIP_TEST_LARGE = \"1\" }\ntimeout"));
    r = verify(cand("good.py"));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("gate.env.SKIP_TEST_LARGE"), std::string::npos) << r.err;
}

TEST_F(BlackboxTest, TheRepositoryIsNeverModifiedEvenByACrashOrAHang) {
    set_spec(replace_all(read("op.toml"), "timeout = 120", "timeout = 3"));
    const auto before = tree_hashes(m_repo);
    auto r = verify(cand("crash.py"));
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.record.at("reason").get<std::string>().find("SIGSEGV"), std::string::npos) << r.record.at("reason");
    EXPECT_EQ(tree_hashes(m_repo), before);
    r = verify(cand("hang.py"));
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.record.at("reason").get<std::string>().find("timed out"), std::string::npos) << r.record.at("reason");
    EXPECT_EQ(tree_hashes(m_repo), before);
    r = verify(cand("edits_frozen.py"), {"--no-bench"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.record.at("reason").get<std::string>().find("frozen file 'tests/test_op.py' was modified"), std::string::npos)
        << r.record.at("reason");
    EXPECT_EQ(tree_hashes(m_repo), before);
    r = verify(cand("good.py"), {"--no-bench"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(tree_hashes(m_repo), before);
}

TEST_F(BlackboxTest, LoopInitIterateBestReport) {
    const std::string kernel = (m_repo / "ops" / "kernel.py").string();
    auto r = run({"init", m_repo.string(), "--candidate", kernel, "--max-iterations", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path ws = m_repo / "profile" / "softplus-opt";
    ASSERT_TRUE(fs::exists(ws / "contract.json")) << r.out;
    const auto contract = nlohmann::json::parse(kloop::platform::read_file(ws / "contract.json"));
    bool test_frozen = false;
    for (const auto& f : contract.at("frozen")) test_frozen = test_frozen || f.at("path") == "tests/test_op.py";
    EXPECT_TRUE(test_frozen) << contract.at("frozen").dump();
    const auto draft = kloop::platform::read_file(ws / "docs" / "draft.md");
    EXPECT_NE(draft.find("black box: the candidate replaces `ops/kernel.py`"), std::string::npos) << draft;

    const fs::path proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: vectorise the whole array with numpy\nExpected: x10 on both shapes\n\n"
                                                 "## Strategy tags\n- vectorization\n");
    fs::copy_file(candidates_dir / "good.py", kernel, fs::copy_options::overwrite_existing);
    r = run({"iterate", "--proposal", proposal.string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("v1: positive"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(ws / "iter_v1" / "kernel.py"));
    const auto log = kloop::platform::read_file(ws / "OPT_LOG.md");
    EXPECT_NE(log.find("vectorise the whole array"), std::string::npos) << log;
    EXPECT_NE(git_log().find("kloop softplus v1 (positive"), std::string::npos) << git_log();
    const auto rec = nlohmann::json::parse(kloop::platform::read_file(ws / "iter_v1" / "benchmark_result.json"));
    EXPECT_TRUE(rec.at("evaluation").contains("blackbox"));
    EXPECT_EQ(rec.at("ab").at("shapes").size(), 2u);

    kloop::platform::write_file_atomic(proposal, "Direction: log1p(exp(x)) directly\nExpected: a little faster\n\n"
                                                 "## Strategy tags\n- fewer ops\n");
    fs::copy_file(candidates_dir / "wrong.py", kernel, fs::copy_options::overwrite_existing);
    r = run({"iterate", "--proposal", proposal.string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("v2: rejected (gate)"), std::string::npos) << r.out;
    EXPECT_NE(git_log().find("kloop softplus v2 (rejected: gate)"), std::string::npos) << git_log();

    r = run({"best", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\"v1\""), std::string::npos) << r.out;

    r = run({"report", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(fs::exists(ws / "final_summary.md"));
}

TEST_F(BlackboxTest, ARedBaselineLeavesTheRepositoryAsItWas) {
    const fs::path kernel = m_repo / "ops" / "kernel.py";
    fs::copy_file(candidates_dir / "wrong.py", kernel, fs::copy_options::overwrite_existing);
    const auto before = tree_hashes(m_repo);
    const auto r = run({"init", m_repo.string(), "--candidate", kernel.string(), "--max-iterations", "2"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    // .gitignore was written before v0 ran (so v0's stored gate is of the loop's repository) and
    // is taken back with the rest.
    EXPECT_FALSE(fs::exists(m_repo / ".gitignore"));
    EXPECT_FALSE(fs::exists(m_repo / "profile" / "softplus-opt"));
    EXPECT_EQ(tree_hashes(m_repo), before);
}

TEST_F(BlackboxTest, EditedFrozenTestFileViolatesTheContract) {
    const std::string kernel = (m_repo / "ops" / "kernel.py").string();
    auto r = run({"init", m_repo.string(), "--candidate", kernel, "--max-iterations", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    kloop::platform::write_file_atomic(m_repo / "tests" / "test_op.py", read("tests/test_op.py") + "\n# weakened\n");
    const fs::path proposal = m_dir.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: d\nExpected: e\n\n## Strategy tags\n- t\n");
    r = run({"iterate", "--proposal", proposal.string()});
    EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
    EXPECT_NE(r.err.find("tests/test_op.py"), std::string::npos) << r.err;
}

}  // namespace
