// Unit under test: platform/host_info — CPU facts and git_state_of with real git.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/subprocess.hpp"

namespace kp = kloop::platform;

namespace {

void must_run(kp::command_runner_base& runner, std::vector<std::string> argv, const std::filesystem::path& cwd) {
    kp::process_request r;
    r.argv = std::move(argv);
    r.cwd = cwd;
    r.timeout_s = 30;
    r.env_overrides = {{"GIT_AUTHOR_NAME", "kloop test"},     {"GIT_AUTHOR_EMAIL", "test@kloop.invalid"},
                       {"GIT_COMMITTER_NAME", "kloop test"},  {"GIT_COMMITTER_EMAIL", "test@kloop.invalid"},
                       {"GIT_CONFIG_NOSYSTEM", "1"},          {"HOME", cwd.string()}};
    auto res = runner.run(r);
    ASSERT_TRUE(res.succeeded()) << r.argv[0] << " " << r.argv[1] << ": " << res.describe() << "\n" << res.stderr_text;
}

bool git_available() {
    kp::posix_command_runner runner;
    kp::process_request r;
    r.argv = {"git", "--version"};
    return runner.run(r).succeeded();
}

}  // namespace

TEST(HostInfoTest, CpuFacts) {
    EXPECT_FALSE(kp::cpu_model().empty());
    EXPECT_GE(kp::logical_cpus(), 1u);
    std::size_t llc = kp::last_level_cache_bytes();
    EXPECT_GE(llc, std::size_t{64} << 10);
    EXPECT_LE(llc, std::size_t{4} << 30);
}

TEST(HostInfoTest, GitStateOfFreshRepoAndDirtyAfterEdit) {
    if (!git_available()) GTEST_SKIP() << "git not installed";
    kp::scoped_temp_dir dir("kloop-host-info-test");
    kp::posix_command_runner runner;
    must_run(runner, {"git", "init", "-q", "."}, dir.path());
    kp::write_file_atomic(dir.path() / "tracked.txt", "one\n");
    must_run(runner, {"git", "add", "tracked.txt"}, dir.path());
    must_run(runner, {"git", "commit", "-q", "-m", "initial"}, dir.path());

    auto st = kp::git_state_of(dir.path(), runner);
    ASSERT_TRUE(st.available);
    EXPECT_EQ(st.commit.size(), 40u);
    EXPECT_TRUE(std::all_of(st.commit.begin(), st.commit.end(), [](unsigned char c) { return std::isxdigit(c); }));
    EXPECT_FALSE(st.dirty);
    EXPECT_EQ(std::filesystem::canonical(st.toplevel), std::filesystem::canonical(dir.path()));

    // Untracked files do not count; editing a tracked one does.
    kp::write_file_atomic(dir.path() / "untracked.txt", "x\n");
    EXPECT_FALSE(kp::git_state_of(dir.path(), runner).dirty);
    kp::write_file_atomic(dir.path() / "tracked.txt", "two\n");
    auto dirty = kp::git_state_of(dir.path(), runner);
    EXPECT_TRUE(dirty.available);
    EXPECT_TRUE(dirty.dirty);
    EXPECT_EQ(dirty.commit, st.commit);
}

TEST(HostInfoTest, NonRepoIsUnavailable) {
    kp::scoped_temp_dir dir("kloop-host-info-test");
    kp::posix_command_runner runner;
    auto st = kp::git_state_of(dir.path(), runner);
    EXPECT_FALSE(st.available);
    EXPECT_TRUE(st.commit.empty());
    auto missing = kp::git_state_of(dir.path() / "does-not-exist", runner);
    EXPECT_FALSE(missing.available);
}
