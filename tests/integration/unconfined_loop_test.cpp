// Unit under test: the loop's promotion rule for unconfined results (docs/security.md,
// docs/loop.md): a Python candidate whose host is not confined (KLOOP_UNCONFINED=1 here, as on a
// kernel without Landlock) has its FASTER iteration recorded as rejected (integrity) unless
// `kloop iterate --allow-unconfined`.
// Numpy only (tests/fixtures/python_numpy); skipped (77) without an interpreter that imports it.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;

namespace {

class UnconfinedLoopTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-unconfined-loop"};
    fs::path m_repo, m_op, m_kernel;

    void SetUp() override {
        if (std::string(KLOOP_TEST_PYTHON).empty()) GTEST_SKIP() << "no Python interpreter with numpy";
        m_repo = m_dir.path() / "repo";
        m_op = m_repo / "op";
        fs::create_directories(m_repo);
        fs::copy(kloop::testing::source_dir() + "/tests/fixtures/python_numpy", m_op, fs::copy_options::recursive);
        m_kernel = m_op / "kernel.py";
        fs::copy_file(kloop::testing::source_dir() + "/tests/fixtures/python_slow/slow_numpy.py", m_kernel);
        for (std::vector<std::string> a : {std::vector<std::string>{"init", "-q"},
                                           {"config", "user.email", "t@localhost"},
                                           {"config", "user.name", "t"},
                                           {"add", "-A"},
                                           {"commit", "-q", "-m", "start"}})
            git(a);
    }

    void git(std::vector<std::string> args) {
        kloop::platform::process_request r;
        r.argv = {"git", "-C", m_repo.string()};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        kloop::platform::posix_command_runner runner;
        ASSERT_TRUE(runner.run(r).succeeded());
    }

    kloop::testing::kloop_run run(std::vector<std::string> args) {
        for (const auto& a : kloop::testing::quick_bench()) args.push_back(a);
        kloop::platform::process_request req;
        req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        req.env_overrides = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home-python"},
                             {"KLOOP_PYTHON", KLOOP_TEST_PYTHON},
                             {"KLOOP_MEMORY_DB", (m_dir.path() / "memory.sqlite").string()},
                             {"KLOOP_UNCONFINED", "1"}};
        req.cwd = m_repo;
        req.timeout_s = 600;
        req.max_capture_bytes = 64 << 20;
        kloop::platform::posix_command_runner runner;
        return kloop::testing::to_kloop_run(runner.run(req));
    }

    kloop::testing::kloop_run iterate(const std::vector<std::string>& extra) {
        fs::copy_file(m_op / "versions" / "v0_numpy.py", m_kernel, fs::copy_options::overwrite_existing);
        const auto proposal = m_dir.path() / "proposal.md";
        kloop::platform::write_file_atomic(proposal, "Direction: no sleep\nExpected: much faster\n\n## Strategy tags\n- nosleep\n");
        std::vector<std::string> args = {"iterate", "--proposal", proposal.string()};
        args.insert(args.end(), extra.begin(), extra.end());
        return run(args);
    }
};

}  // namespace

TEST_F(UnconfinedLoopTest, AFasterUnconfinedCandidateIsPromotedOnlyWhenAllowed) {
    const auto init = run({"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", "4"});
    ASSERT_EQ(init.exit_code, 0) << init.err << init.out;

    const auto refused = iterate({});
    ASSERT_EQ(refused.exit_code, 0) << refused.err << refused.out;
    EXPECT_NE(refused.out.find("v1: rejected"), std::string::npos) << refused.out;
    EXPECT_NE(refused.out.find("unconfined"), std::string::npos) << refused.out;

    const auto allowed = iterate({"--allow-unconfined"});
    ASSERT_EQ(allowed.exit_code, 0) << allowed.err << allowed.out;
    EXPECT_NE(allowed.out.find("v2: positive"), std::string::npos) << allowed.out;
}
