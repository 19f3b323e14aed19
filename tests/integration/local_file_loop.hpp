// Test helper: the loop on a candidate made of its source and a local file it includes or imports,
// in a scratch git repository holding a copy of an example — verify, init, an iteration that
// changes only the local file (a new version: same candidate_sha256, another sources_sha256, the
// file in iter_v1/ and in the commit), a rebuild of that version from its snapshot alone, best
// and report (the final claim names the local file). Shared by the CUDA and Triton GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "integration/kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace kloop::testing {

struct local_file_loop {
    std::string example;                 // the example directory to copy
    std::string kernel_name;             // "kernel.cu"
    std::string kernel_text;             // includes or imports local_name
    std::string local_name;              // "rms_impl.cuh"
    std::string local_text;              // the first version of the local file
    std::string local_text_changed;      // the second
    std::vector<std::string> loop_args;  // the stopping rule and gate options for init and iterate
    std::vector<std::string> iterate_args;
    std::vector<std::string> best_args;  // for best and report
    std::function<kloop_run(const std::vector<std::string>&)> run;
};

inline void expect_local_file_travels_through_the_loop(const local_file_loop& p) {
    namespace fs = std::filesystem;
    platform::scoped_temp_dir tmp("kloop-local-file-loop");
    const fs::path repo = tmp.path() / "repo";
    const fs::path op = repo / "op";
    fs::create_directories(repo);
    fs::copy(p.example, op, fs::copy_options::recursive);
    const fs::path kernel = op / p.kernel_name;
    const fs::path local = op / p.local_name;
    platform::write_file_atomic(kernel, p.kernel_text);
    platform::write_file_atomic(local, p.local_text);
    platform::posix_command_runner commands;
    const auto git = [&](std::vector<std::string> args) {
        platform::process_request req;
        req.argv = {"git", "-C", repo.string(), "-c", "user.email=t@localhost", "-c", "user.name=t"};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        const auto r = commands.run(req);
        EXPECT_TRUE(r.succeeded()) << r.stderr_text;
        return r.stdout_text;
    };
    git({"init", "-q"});
    git({"add", "-A"});
    git({"commit", "-qm", "start"});
    const auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
        a.insert(a.end(), more.begin(), more.end());
        return a;
    };

    const auto v = p.run(with({"verify", op.string(), "--candidate", kernel.string(), "--json", "--no-bench"}, p.loop_args));
    ASSERT_EQ(v.exit_code, 0) << v.err << v.out;
    const std::string ws = (repo / "ws").string();
    const auto i = p.run(with({"init", op.string(), "--candidate", kernel.string(), "--max-iterations", "3", "--workspace", ws},
                              p.loop_args));
    ASSERT_EQ(i.exit_code, 0) << i.err << i.out;
    const auto v0 = nlohmann::json::parse(platform::read_file(fs::path(ws) / "iter_v0" / "benchmark_result.json")).at("iteration");
    EXPECT_EQ(v0.at("local_files"), nlohmann::json::array({p.local_name}));

    platform::write_file_atomic(local, p.local_text_changed);  // the local file alone changes
    const fs::path proposal = tmp.path() / "proposal.md";
    platform::write_file_atomic(proposal, "Direction: retune through the local file\nExpected: about the same\n\n"
                                          "## Strategy tags\n- local file\n");
    const auto it = p.run(with(with({"iterate", "--workspace", ws, "--candidate", kernel.string(), "--proposal", proposal.string()},
                                    p.loop_args),
                               p.iterate_args));
    ASSERT_EQ(it.exit_code, 0) << it.err << it.out;
    EXPECT_EQ(it.out.find("v1: rejected"), std::string::npos) << it.out;
    const auto v1 = nlohmann::json::parse(platform::read_file(fs::path(ws) / "iter_v1" / "benchmark_result.json")).at("iteration");
    EXPECT_EQ(v1.at("candidate_sha256"), v0.at("candidate_sha256"));
    EXPECT_NE(v1.at("sources_sha256"), v0.at("sources_sha256"));
    EXPECT_EQ(platform::read_file(fs::path(ws) / "iter_v1" / p.local_name), p.local_text_changed);
    EXPECT_NE(git({"show", "--name-only", "--format=", "HEAD"}).find("op/" + p.local_name), std::string::npos);

    // v1 rebuilds from its snapshot alone: the working copy of the local file is broken now.
    platform::write_file_atomic(local, "this is not source code\n");
    const auto rebuilt = p.run(with({"verify", op.string(), "--candidate", ws + "/iter_v1/" + p.kernel_name, "--json",
                                     "--no-bench"},
                                    p.loop_args));
    EXPECT_EQ(rebuilt.exit_code, 0) << rebuilt.err << rebuilt.out;
    const auto best = p.run(with({"best", "--workspace", ws, "--json"}, p.best_args));
    ASSERT_EQ(best.exit_code, 0) << best.err << best.out;
    const auto rep = p.run(with(with({"report", "--workspace", ws, "--quiet"}, p.loop_args), p.best_args));
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    const auto summary = platform::read_file(fs::path(ws) / "final_summary.md");
    EXPECT_NE(summary.find("with its local files `" + p.local_name + "`"), std::string::npos) << summary;
}

}  // namespace kloop::testing
