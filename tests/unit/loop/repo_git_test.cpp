// Unit under test: loop/repo_git — committing the candidate with real git in a scratch repository,
// and recovering the index.lock a killed kloop's git leaves behind (and only that one).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "loop/repo_git.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;

namespace {

class RepoGitTest : public ::testing::Test {
protected:
    kp::scoped_temp_dir m_dir{"kloop-repo-git"};
    fs::path m_repo, m_file;
    kp::posix_command_runner m_runner;

    void SetUp() override {
        m_repo = m_dir.path() / "repo";
        m_file = m_repo / "kernel.cpp";
        kp::write_file_atomic(m_file, "// v0\n");
        for (std::vector<std::string> a : {std::vector<std::string>{"init", "-q"},
                                           {"config", "user.email", "t@localhost"},
                                           {"config", "user.name", "t"},
                                           {"add", "-A"},
                                           {"commit", "-q", "-m", "start"}})
            ASSERT_TRUE(git(a).succeeded());
    }

    kp::process_result git(std::vector<std::string> args) {
        kp::process_request r;
        r.argv = {"git", "-C", m_repo.string()};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        return m_runner.run(r);
    }
    fs::path git_dir() const { return m_repo / ".git"; }
    // What a kloop SIGKILLed while its git committed leaves: its claim, then git's lock.
    void leave_a_dead_kloops_lock() {
        kp::write_file_atomic(git_dir() / "kloop-commit.owner", "4242\n");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        kp::write_file_atomic(git_dir() / "index.lock", "");
    }
};

}  // namespace

TEST_F(RepoGitTest, CommitsTheCandidateAndLeavesNoClaim) {
    kp::write_file_atomic(m_file, "// v1\n");
    const auto g = kloop::loop::commit_candidate(m_file, "v1: positive", m_runner);
    EXPECT_TRUE(g.committed) << g.note;
    EXPECT_EQ(g.commit.size(), 40u);
    EXPECT_TRUE(g.repair.empty()) << g.repair;
    EXPECT_FALSE(fs::exists(git_dir() / "kloop-commit.owner"));
}

TEST_F(RepoGitTest, TheIndexLockOfAKloopThatDiedIsRemovedWithANote) {
    leave_a_dead_kloops_lock();
    kp::write_file_atomic(m_file, "// v2\n");
    const auto g = kloop::loop::commit_candidate(m_file, "v2: negative", m_runner);
    EXPECT_TRUE(g.committed) << g.note;
    EXPECT_NE(g.repair.find("removed the index.lock that kloop (pid 4242) left"), std::string::npos) << g.repair;
    EXPECT_FALSE(fs::exists(git_dir() / "index.lock"));
}

TEST_F(RepoGitTest, AnIndexLockThatIsNotKloopsIsLeftAlone) {
    kp::write_file_atomic(git_dir() / "index.lock", "");  // a user's git at work, or its debris
    kp::write_file_atomic(m_file, "// v3\n");
    const auto g = kloop::loop::commit_candidate(m_file, "v3", m_runner);
    EXPECT_FALSE(g.committed);
    EXPECT_NE(g.note.find("index.lock"), std::string::npos) << g.note;
    EXPECT_TRUE(g.repair.empty()) << g.repair;
    EXPECT_TRUE(fs::exists(git_dir() / "index.lock"));

    // Older than a dead kloop's claim: still not kloop's.
    kp::write_file_atomic(git_dir() / "kloop-commit.owner", "4242\n");
    const auto h = kloop::loop::commit_candidate(m_file, "v3", m_runner);
    EXPECT_FALSE(h.committed);
    EXPECT_TRUE(fs::exists(git_dir() / "index.lock"));
}

TEST_F(RepoGitTest, AGitKilledWhileCommittingLeavesNoLockForTheNextCommit) {
    // A hook that SIGKILLs the git running it: the index.lock stays, as after a kill from outside.
    const auto hook = git_dir() / "hooks" / "pre-commit";
    kp::write_file_atomic(hook, "#!/bin/sh\nkill -9 $PPID\nexit 1\n");
    fs::permissions(hook, fs::perms::owner_all);
    kp::write_file_atomic(m_file, "// v4\n");
    const auto g = kloop::loop::commit_candidate(m_file, "v4", m_runner);
    EXPECT_FALSE(g.committed);
    EXPECT_NE(g.repair.find("killed git"), std::string::npos) << g.note << " / " << g.repair;
    EXPECT_FALSE(fs::exists(git_dir() / "index.lock"));
    fs::remove(hook);
    const auto h = kloop::loop::commit_candidate(m_file, "v4 again", m_runner);
    EXPECT_TRUE(h.committed) << h.note;
}
