// Test helper: a scratch git repository for the loop's integration tests — a copy of
// examples/rmsnorm with kernel.cpp = v0_naive, committed, and where its workspace goes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/kloop_process.hpp"
#include "platform/subprocess.hpp"

namespace kloop::testing {

struct scratch_loop_repo {
    std::filesystem::path repo, op, kernel, ws;
};

// `git -C repo args...`; a failure is a test failure (stderr shown).
inline platform::process_result git_in(const std::filesystem::path& repo, const std::vector<std::string>& args) {
    platform::process_request r;
    r.argv = {"git", "-C", repo.string()};
    r.argv.insert(r.argv.end(), args.begin(), args.end());
    platform::posix_command_runner runner;
    auto res = runner.run(r);
    EXPECT_TRUE(res.succeeded()) << res.stderr_text;
    return res;
}

// The repository under `dir`/repo, created and committed.
inline scratch_loop_repo make_scratch_loop_repo(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    scratch_loop_repo s;
    s.repo = dir / "repo";
    s.op = s.repo / "rmsnorm";
    fs::create_directories(s.repo);
    fs::copy(example_dir(), s.op, fs::copy_options::recursive);
    s.kernel = s.op / "kernel.cpp";
    fs::copy_file(s.op / "versions" / "v0_naive.cpp", s.kernel);
    s.ws = s.repo / "profile" / "rmsnorm-opt";
    for (const auto& args : std::vector<std::vector<std::string>>{{"init", "-q"},
                                                                  {"config", "user.email", "t@localhost"},
                                                                  {"config", "user.name", "t"},
                                                                  {"add", "-A"},
                                                                  {"commit", "-q", "-m", "start"}})
        git_in(s.repo, args);
    return s;
}

}  // namespace kloop::testing
