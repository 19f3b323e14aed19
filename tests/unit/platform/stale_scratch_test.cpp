// Unit under test: platform/stale_scratch — a scratch directory is swept once its owner is dead,
// never while it lives, and never without a claim; scoped_temp_dir claims its directory.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "platform/file_io.hpp"
#include "platform/stale_scratch.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;

TEST(StaleScratchTest, OnlyDirectoriesOfDeadOwnersAreSwept) {
    kp::scoped_temp_dir root("kloop-sweep-test");
    const fs::path alive = root.path() / "kloop-alive-1";
    const fs::path dead = root.path() / "kloop-dead-1";
    const fs::path unclaimed = root.path() / "kloop-unclaimed-1";
    for (const auto& d : {alive, dead, unclaimed}) {
        fs::create_directories(d / "sub");
        kp::write_file_atomic(d / "sub" / "events.jsonl", "{}\n");
    }
    const int claim = kp::claim_scratch_dir(alive);
    ASSERT_GE(claim, 0);
    const pid_t owner = ::fork();
    ASSERT_GE(owner, 0);
    if (owner == 0) {
        (void)kp::claim_scratch_dir(dead);
        ::_exit(0);  // dies holding the claim, as a SIGKILLed kloop would
    }
    int status = 0;
    ASSERT_EQ(::waitpid(owner, &status, 0), owner);
    ASSERT_TRUE(fs::exists(fs::path(dead.string() + ".owner")));

    const auto swept = kp::sweep_stale_scratch_dirs(root.path());
    EXPECT_EQ(swept.directories_removed, 1);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_FALSE(fs::exists(fs::path(dead.string() + ".owner")));
    EXPECT_TRUE(fs::exists(alive / "sub" / "events.jsonl"));
    EXPECT_TRUE(fs::exists(unclaimed / "sub" / "events.jsonl"));

    kp::release_scratch_claim(alive, claim);
    EXPECT_FALSE(fs::exists(fs::path(alive.string() + ".owner")));
    EXPECT_EQ(kp::sweep_stale_scratch_dirs(root.path()).directories_removed, 0);  // released: not a dead owner's
    EXPECT_TRUE(fs::exists(alive));
}

TEST(StaleScratchTest, ScopedTempDirClaimsItsDirectoryUntilItIsGoneOrKept) {
    fs::path path;
    {
        kp::scoped_temp_dir d("kloop-sweep-test");
        path = d.path();
        EXPECT_TRUE(fs::exists(fs::path(path.string() + ".owner")));
    }
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(fs::path(path.string() + ".owner")));
    kp::scoped_temp_dir kept("kloop-sweep-test");
    kept.keep();
    EXPECT_FALSE(fs::exists(fs::path(kept.path().string() + ".owner")));
    fs::remove_all(kept.path());
}
