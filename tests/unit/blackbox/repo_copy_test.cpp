// Unit under test: blackbox/repo_copy — the temporary copy a black-box run works in: what is
// copied, what is left out, and that placing a candidate never touches the original.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/blackbox/repo_copy.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using namespace kloop::backend::blackbox;
using kloop::platform::read_file;
using kloop::platform::scoped_temp_dir;
using kloop::platform::write_file_atomic;

namespace {

class RepoCopyTest : public ::testing::Test {
protected:
    scoped_temp_dir m_dir{"kloop-repo-copy-test"};
    fs::path m_repo, m_dest;

    void SetUp() override {
        m_repo = m_dir.path() / "repo";
        m_dest = m_dir.path() / "copy";
        write_file_atomic(m_repo / "ops" / "kernel.py", "v0\n");
        write_file_atomic(m_repo / "tests" / "test_op.py", "test\n");
        write_file_atomic(m_repo / ".git" / "HEAD", "ref: refs/heads/main\n");
        write_file_atomic(m_repo / "ops" / "__pycache__" / "kernel.cpython-311.pyc", "x");
        write_file_atomic(m_repo / "profile" / "op-opt" / "contract.json", "{}");
        write_file_atomic(m_repo / "profile" / "op-opt" / "OPT_LOG.md", "log");
        write_file_atomic(m_repo / "profile" / "notes.md", "kept");
        write_file_atomic(m_repo / "data" / "big.bin", "big");
        fs::create_symlink("ops/kernel.py", m_repo / "link.py");
    }
};

TEST_F(RepoCopyTest, CopiesTheTreeAndLeavesOutGitCachesAndWorkspaces) {
    const auto stats = copy_repository(m_repo, m_dest, {"data"});
    EXPECT_EQ(read_file(m_dest / "ops" / "kernel.py"), "v0\n");
    EXPECT_EQ(read_file(m_dest / "tests" / "test_op.py"), "test\n");
    EXPECT_EQ(read_file(m_dest / "profile" / "notes.md"), "kept");
    EXPECT_FALSE(fs::exists(m_dest / ".git"));
    EXPECT_FALSE(fs::exists(m_dest / "ops" / "__pycache__"));
    EXPECT_FALSE(fs::exists(m_dest / "profile" / "op-opt"));
    EXPECT_FALSE(fs::exists(m_dest / "data"));
    EXPECT_TRUE(fs::is_symlink(m_dest / "link.py"));
    EXPECT_EQ(read_file(m_dest / "link.py"), "v0\n");  // relative link resolves inside the copy
    EXPECT_EQ(stats.links, 1u);
    EXPECT_EQ(stats.files, 3u);
    EXPECT_FALSE(stats.skipped.empty());
}

TEST_F(RepoCopyTest, TheTreeDigestFollowsEveryCopiedByteAndOnlyThose) {
    write_file_atomic(m_dir.path() / "cand.py", "candidate\n");
    const fs::path cand = m_dir.path() / "cand.py";
    const auto d0 = tree_digest(m_repo, {"data"}, "ops/kernel.py", cand);
    EXPECT_EQ(d0.size(), 64u);
    EXPECT_EQ(tree_digest(m_repo, {"data"}, "ops/kernel.py", cand), d0);
    // What a copy leaves out does not count: .git, caches, workspaces, excluded paths; nor the
    // target's own bytes (the candidate replaces them).
    write_file_atomic(m_repo / ".git" / "HEAD", "ref: refs/heads/other\n");
    write_file_atomic(m_repo / "profile" / "op-opt" / "OPT_LOG.md", "more log");
    write_file_atomic(m_repo / "data" / "big.bin", "bigger");
    write_file_atomic(m_repo / "ops" / "kernel.py", "v1\n");
    EXPECT_EQ(tree_digest(m_repo, {"data"}, "ops/kernel.py", cand), d0);
    // Everything else does.
    write_file_atomic(m_repo / "tests" / "test_op.py", "test 2\n");
    const auto d1 = tree_digest(m_repo, {"data"}, "ops/kernel.py", cand);
    EXPECT_NE(d1, d0);
    write_file_atomic(m_repo / "ops" / "new.py", "");
    const auto d2 = tree_digest(m_repo, {"data"}, "ops/kernel.py", cand);
    EXPECT_NE(d2, d1);
    fs::remove(m_repo / "link.py");
    fs::create_symlink("tests/test_op.py", m_repo / "link.py");
    const auto d3 = tree_digest(m_repo, {"data"}, "ops/kernel.py", cand);
    EXPECT_NE(d3, d2);
    write_file_atomic(cand, "candidate 2\n");
    EXPECT_NE(tree_digest(m_repo, {"data"}, "ops/kernel.py", cand), d3);
}

TEST_F(RepoCopyTest, PlacingACandidateWritesOnlyTheCopy) {
    (void)copy_repository(m_repo, m_dest, {});
    write_file_atomic(m_dir.path() / "cand.py", "candidate\n");
    place_candidate(m_dir.path() / "cand.py", m_dest, "ops/kernel.py");
    EXPECT_EQ(read_file(m_dest / "ops" / "kernel.py"), "candidate\n");
    EXPECT_EQ(read_file(m_repo / "ops" / "kernel.py"), "v0\n");
}

TEST_F(RepoCopyTest, ATargetThatIsALinkIsReplacedNotFollowed) {
    (void)copy_repository(m_repo, m_dest, {});
    write_file_atomic(m_dir.path() / "cand.py", "candidate\n");
    place_candidate(m_dir.path() / "cand.py", m_dest, "link.py");
    EXPECT_FALSE(fs::is_symlink(m_dest / "link.py"));
    EXPECT_EQ(read_file(m_dest / "link.py"), "candidate\n");
    EXPECT_EQ(read_file(m_dest / "ops" / "kernel.py"), "v0\n");
    EXPECT_EQ(read_file(m_repo / "ops" / "kernel.py"), "v0\n");
}

TEST_F(RepoCopyTest, ADestinationInsideTheRepositoryIsNotCopiedIntoItself) {
    const fs::path inside = m_repo / "keep" / "copy";
    (void)copy_repository(m_repo, inside, {});
    EXPECT_TRUE(fs::exists(inside / "ops" / "kernel.py"));
    EXPECT_FALSE(fs::exists(inside / "keep" / "copy"));
}

TEST_F(RepoCopyTest, AMissingCandidateIsAUsageError) {
    (void)copy_repository(m_repo, m_dest, {});
    EXPECT_THROW(place_candidate(m_dir.path() / "nope.py", m_dest, "ops/kernel.py"), kloop::usage_error);
}

TEST_F(RepoCopyTest, AlwaysExcludedNames) {
    EXPECT_TRUE(is_always_excluded(m_repo / ".git"));
    EXPECT_TRUE(is_always_excluded(m_repo / "ops" / "__pycache__"));
    EXPECT_TRUE(is_always_excluded(m_repo / "profile" / "op-opt"));
    EXPECT_FALSE(is_always_excluded(m_repo / "profile"));
    EXPECT_FALSE(is_always_excluded(m_repo / "ops"));
}

}  // namespace
