// Unit under test: platform/paths — KLOOP_HOME / XDG / HOME resolution, and kloop's own files
// (the data directory, the ABI include directory, the tools) found relative to the executable in
// an installed tree and in the build tree, each with its environment override.
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
        fs::path d = kp::abi_include_dir();  // the build tree's link to the checkout's include/, resolved
        EXPECT_TRUE(fs::is_regular_file(d / "kloop" / "kernel.h")) << d;
        EXPECT_EQ(d, fs::canonical(fs::path(KLOOP_TEST_SOURCE_DIR) / "include"));
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

TEST(PathsTest, DataDirInTheBuildTree) {
    scoped_env data("KLOOP_DATA_DIR", std::nullopt);
    const fs::path d = kp::data_dir();  // <build>/share/kloop, found from <build>/tests/unit/platform
    EXPECT_EQ(d, (fs::path(KLOOP_TEST_BINARY_DIR) / kp::layout().data_dir).lexically_normal());
    EXPECT_TRUE(fs::is_regular_file(d / "python" / "kloop_worker" / "__init__.py")) << d;
    EXPECT_TRUE(fs::is_regular_file(d / "calibrate" / "op.toml")) << d;
    EXPECT_TRUE(fs::is_regular_file(d / "examples" / "rmsnorm" / "op.toml")) << d;
}

TEST(PathsTest, DataDirOverride) {
    kp::scoped_temp_dir tmp("kloop-paths-test");
    {
        scoped_env data("KLOOP_DATA_DIR", tmp.path().string());
        EXPECT_EQ(kp::data_dir(), tmp.path());
    }
    {
        scoped_env data("KLOOP_DATA_DIR", (tmp.path() / "missing").string());
        try {
            (void)kp::data_dir();
            FAIL() << "expected usage_error";
        } catch (const kloop::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("KLOOP_DATA_DIR"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
        }
    }
}

TEST(PathsTest, PrefixRootsInstalledFirstThenUpwards) {
    if (kp::layout().bin_to_prefix != "..") GTEST_SKIP() << "configured with a bin directory deeper than one folder";
    EXPECT_EQ(kp::prefix_roots("/opt/kloop/bin"), (std::vector<fs::path>{"/opt/kloop", "/opt", "/"}));
    EXPECT_EQ(kp::prefix_roots("/b/tests/unit/platform"),
              (std::vector<fs::path>{"/b/tests/unit", "/b/tests", "/b"}));
}

// A tree laid out like an install (GNUInstallDirs' defaults: <t>/bin,
// <t>/libexec/kloop/kloop-runner, <t>/include/kloop/kernel.h, <t>/share/kloop/).
TEST(PathsTest, AnInstalledTreeIsFoundFromItsBinDirectory) {
    const auto& l = kp::layout();
    if (l.bin_to_prefix != "..") GTEST_SKIP() << "configured with a bin directory deeper than one folder";
    kp::scoped_temp_dir tmp("kloop-paths-test");
    const fs::path t = tmp.path();
    fs::create_directories(t / "bin");
    kp::write_file_atomic(t / l.tool_dir / "kloop-runner", "");
    kp::write_file_atomic(t / l.include_dir / "kloop" / "kernel.h", "/* test */\n");
    fs::create_directories(t / l.data_dir / "examples");
    EXPECT_EQ(kp::find_data_dir(t / "bin"), t / l.data_dir);
    EXPECT_EQ(kp::find_abi_include_dir(t / "bin"), fs::canonical(t / l.include_dir));
    EXPECT_EQ(kp::find_tool(t / "bin", "kloop-runner"), t / l.tool_dir / "kloop-runner");
    // Not installed (no CUDA): named where the install would have it.
    EXPECT_EQ(kp::find_tool(t / "bin", "kloop-runner-cuda"), t / l.tool_dir / "kloop-runner-cuda");
    // A tool next to kloop is still found when the installed directory lacks it.
    kp::write_file_atomic(t / "bin" / "kloop-extra", "");
    EXPECT_EQ(kp::find_tool(t / "bin", "kloop-extra"), t / "bin" / "kloop-extra");
}

// A tree laid out like a build: <t>/src/{kloop,kloop-runner}, <t>/include and <t>/share/kloop
// (links to the checkout in a real build), a test binary three folders down.
TEST(PathsTest, ABuildTreeIsFoundFromItsSubfolders) {
    const auto& l = kp::layout();
    kp::scoped_temp_dir tmp("kloop-paths-test");
    const fs::path t = tmp.path();
    kp::write_file_atomic(t / "src" / "kloop-runner", "");
    kp::write_file_atomic(t / "checkout" / "include" / "kloop" / "kernel.h", "/* test */\n");
    fs::create_directories((t / l.include_dir).parent_path());
    fs::create_directory_symlink(t / "checkout" / "include", t / l.include_dir);
    fs::create_directories(t / l.data_dir);
    fs::create_directories(t / "tests" / "unit" / "platform");
    EXPECT_EQ(kp::find_tool(t / "src", "kloop-runner"), t / "src" / "kloop-runner");
    EXPECT_EQ(kp::find_tool(t / "src", "kloop-runner-cuda"), t / "src" / "kloop-runner-cuda");
    EXPECT_EQ(kp::find_data_dir(t / "src"), t / l.data_dir);
    EXPECT_EQ(kp::find_data_dir(t / "tests" / "unit" / "platform"), t / l.data_dir);
    EXPECT_EQ(kp::find_abi_include_dir(t / "tests" / "unit" / "platform"), fs::canonical(t / "checkout" / "include"));
}

TEST(PathsTest, NothingFoundFarFromATree) {
    kp::scoped_temp_dir tmp("kloop-paths-test");
    const fs::path deep = tmp.path() / "a" / "b" / "c" / "d";
    fs::create_directories(deep);
    fs::create_directories(tmp.path() / kp::layout().data_dir);  // four levels up: out of reach
    EXPECT_EQ(kp::find_data_dir(deep), std::nullopt);
    EXPECT_EQ(kp::find_abi_include_dir(deep), std::nullopt);
}
