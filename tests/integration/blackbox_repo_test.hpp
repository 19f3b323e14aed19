// Test support: a black-box fixture repository copied into a temporary git repository, and the
// real kloop binary run on it (tests/integration/blackbox_test.cpp, fla_registry_test.cpp).
//
// Needs a Python with pytest and numpy: KLOOP_BLACKBOX_TEST_PYTHON, found by
// tests/integration/CMakeLists.txt; the tests skip without one.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace kloop::testing {

namespace fs = std::filesystem;

inline const std::string blackbox_python = KLOOP_BLACKBOX_TEST_PYTHON;

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

// Every file of the repository (but .git and kloop's workspace) → its SHA-256.
inline std::map<std::string, std::string> tree_hashes(const fs::path& root) {
    std::map<std::string, std::string> out;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        const auto name = it->path().filename().string();
        if (it->is_directory() && (name == ".git" || name == "profile")) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file()) out[it->path().lexically_relative(root).string()] = kloop::platform::sha256_file(it->path());
    }
    return out;
}

// A git repository holding a copy of fixture(); op.toml names the interpreter that has pytest.
class blackbox_repo_test : public ::testing::Test {
protected:
    [[nodiscard]] virtual fs::path fixture() const = 0;
    [[nodiscard]] virtual fs::path candidates() const = 0;

    kloop::platform::scoped_temp_dir m_dir{"kloop-blackbox-test"};
    fs::path m_repo, m_memory;

    void SetUp() override {
        if (blackbox_python.empty()) GTEST_SKIP() << "no python with pytest and numpy (KLOOP_BLACKBOX_TEST_PYTHON)";
        m_repo = m_dir.path() / "repo";
        m_memory = m_dir.path() / "memory.sqlite";
        fs::copy(fixture(), m_repo, fs::copy_options::recursive);
        for (auto it = fs::recursive_directory_iterator(m_repo); it != fs::recursive_directory_iterator(); ++it)
            if (it->path().filename() == "__pycache__" || it->path().filename() == ".pytest_cache") {
                fs::remove_all(it->path());
                break;
            }
        set_spec(replace_all(read("op.toml"), "\"python3\"", "\"" + blackbox_python + "\""));
        git({"init", "-q"});
        git({"config", "user.email", "t@localhost"});
        git({"config", "user.name", "t"});
        git({"add", "-A"});
        git({"commit", "-q", "-m", "fixture"});
    }

    std::string read(const std::string& rel) const { return kloop::platform::read_file(m_repo / rel); }
    void set_spec(const std::string& text) const { kloop::platform::write_file_atomic(m_repo / "op.toml", text); }

    void git(const std::vector<std::string>& args) {
        kloop::platform::process_request r;
        r.argv = {"git", "-C", m_repo.string()};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        kloop::platform::posix_command_runner runner;
        const auto res = runner.run(r);
        ASSERT_TRUE(res.succeeded()) << res.stderr_text;
    }

    std::string git_log() {
        kloop::platform::process_request r;
        r.argv = {"git", "-C", m_repo.string(), "log", "--format=%s"};
        kloop::platform::posix_command_runner runner;
        return runner.run(r).stdout_text;
    }

    kloop_run run(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
        for (const auto& a : {"--min-samples", "5", "--min-time", "0.01", "--max-time", "0.3"})
            if (args[0] == "verify" || args[0] == "init" || args[0] == "iterate" || args[0] == "report") args.emplace_back(a);
        kloop::platform::process_request req;
        req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        req.env_overrides = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"},
                             {"KLOOP_MEMORY_DB", m_memory.string()}};
        req.env_overrides.insert(req.env_overrides.end(), env.begin(), env.end());
        req.cwd = m_repo;
        req.timeout_s = 300;
        req.max_capture_bytes = 64 << 20;
        kloop::platform::posix_command_runner runner;
        return to_kloop_run(runner.run(req));
    }

    kloop_run verify(const std::string& candidate, std::vector<std::string> extra = {},
                     std::vector<std::pair<std::string, std::string>> env = {}) {
        std::vector<std::string> args = {"verify", m_repo.string(), "--candidate", candidate, "--json"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run(args, std::move(env));
    }

    [[nodiscard]] std::string cand(const std::string& name) const { return (candidates() / name).string(); }
};


}  // namespace kloop::testing
