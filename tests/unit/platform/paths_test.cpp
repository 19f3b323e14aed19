// Unit under test: platform/paths — KLOOP_HOME / XDG / HOME resolution, the ABI include
// directory and sibling tools, each through its environment override.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "support/scoped_env.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;

using kloop::testing::scoped_env;

TEST(PathsTest, KloopHomeWins) {
    scoped_env home("HOME", "/home/someone");
    scoped_env xd("XDG_DATA_HOME", "/xdg/data");
    scoped_env xc("XDG_CACHE_HOME", "/xdg/cache");
    scoped_env kh("KLOOP_HOME", "/opt/kloop-home");
    EXPECT_EQ(kp::kloop_home(), fs::path("/opt/kloop-home"));
    EXPECT_EQ(kp::cache_dir(), fs::path("/opt/kloop-home/cache"));
}

TEST(PathsTest, XdgThenHome) {
    scoped_env home("HOME", "/home/someone");
    scoped_env kh("KLOOP_HOME", std::nullopt);
    {
        scoped_env xd("XDG_DATA_HOME", "/xdg/data");
        scoped_env xc("XDG_CACHE_HOME", "/xdg/cache");
        EXPECT_EQ(kp::kloop_home(), fs::path("/xdg/data/kloop"));
        EXPECT_EQ(kp::cache_dir(), fs::path("/xdg/cache/kloop"));
    }
    {
        scoped_env xd("XDG_DATA_HOME", std::nullopt);
        scoped_env xc("XDG_CACHE_HOME", "relative/ignored");
        EXPECT_EQ(kp::kloop_home(), fs::path("/home/someone/.local/share/kloop"));
        EXPECT_EQ(kp::cache_dir(), fs::path("/home/someone/.cache/kloop"));
    }
}

TEST(PathsTest, SelfExeAndSiblingTool) {
    fs::path exe = kp::self_exe_path();
    EXPECT_TRUE(exe.is_absolute());
    EXPECT_EQ(exe.filename(), "kloop.test.platform");
    {
        scoped_env runner("KLOOP_RUNNER", std::nullopt);
        EXPECT_EQ(kp::sibling_tool("kloop-runner"), exe.parent_path() / "kloop-runner");
    }
    {
        scoped_env runner("KLOOP_RUNNER", "/custom/kloop-runner");
        EXPECT_EQ(kp::sibling_tool("kloop-runner"), fs::path("/custom/kloop-runner"));
        EXPECT_EQ(kp::sibling_tool("kloop"), exe.parent_path() / "kloop");  // only the runner is overridden
    }
}

TEST(PathsTest, AbiIncludeDir) {
    {
        scoped_env inc("KLOOP_INCLUDE_DIR", std::nullopt);
        fs::path d = kp::abi_include_dir();  // the source tree's include/ in a development build
        EXPECT_TRUE(fs::is_regular_file(d / "kloop" / "kernel.h")) << d;
    }
    kp::scoped_temp_dir tmp("kloop-paths-test");
    {
        scoped_env inc("KLOOP_INCLUDE_DIR", tmp.path().string());
        try {
            (void)kp::abi_include_dir();
            FAIL() << "expected usage_error";
        } catch (const kloop::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("KLOOP_INCLUDE_DIR"), std::string::npos) << e.what();
        }
        kp::write_file_atomic(tmp.path() / "kloop" / "kernel.h", "/* test */\n");
        EXPECT_EQ(kp::abi_include_dir(), tmp.path());
    }
}
