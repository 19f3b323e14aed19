// kloop cli: options shared by the loop's verbs (see loop_options.hpp).
#include "cli/loop_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>

#include "cli/option_checks.hpp"
#include "cli/timing_options.hpp"
#include "loop/strategy_memory.hpp"
#include "loop/workspace.hpp"
#include "platform/host_info.hpp"

namespace kloop::cli {

void add_profile_options(CLI::App& sub, loop::profile_options& profile) {
    sub.add_flag("--no-profile", [&profile](std::int64_t) { profile.enabled = false; },
                 "Skip the Nsight Compute step (a targeted and a full capture per mode of a CUDA op); the version's "
                 "profile is recorded as missing, so `kloop best` needs --allow-unprofiled to rank it");
    sub.add_option("--profile-timeout", profile.timeout_s, "Wall-clock limit per ncu run, seconds")
        ->check(seconds_option())
        ->capture_default_str();
}

void add_iteration_options(CLI::App& sub, loop::iterate_request& req) {
    add_bench_options(sub, req.options);
    add_profile_options(sub, req.profile);
    add_min_effect_options(sub, req.ab);
    sub.add_flag("--allow-unconfined", req.allow_unconfined,
                 "Promote a FASTER candidate that ran unconfined (the Python worker, a kernel without seccomp or "
                 "Landlock); without it such a result is rejected (docs/security.md)");
    add_require_quiet_option(sub, req.require_quiet, "a FASTER candidate timed on a busy machine is not promoted");
}

void add_held_out_option(CLI::App& sub, eval::evaluation_options& o) {
    sub.add_option("--held-out", o.held_out,
                   "Held-out shapes the gate draws per mode from the spec's dim and param domains (shapes and "
                   "param values op.toml does not list), from the drawn seed (--seed replays them); 0: none")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
}

void add_bench_options(CLI::App& sub, eval::evaluation_options& o) {
    add_held_out_option(sub, o);
    sub.add_option("--timeout", o.timeout_s, "Wall-clock limit per runner process, seconds")
        ->check(seconds_option())
        ->capture_default_str();
    add_runner_limit_options(sub, o);
    add_stopping_rule_options(sub, o.stop, timed_sides::one);
}

void add_runner_limit_options(CLI::App& sub, eval::evaluation_options& o) {
    sub.add_option("--compile-timeout", o.compile_timeout_s,
                   "Wall-clock limit per compile (c++, nvcc) or Python import probe, seconds")
        ->check(seconds_option())
        ->capture_default_str();
    sub.add_option_function<std::size_t>(
           "--max-output-mib", [&o](const std::size_t& mib) { o.max_output_bytes = mib << 20; },
           "What each of a runner's stdout and stderr logs keeps of the candidate's prints, MiB; the rest is read "
           "and dropped")
        ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
        ->default_str(std::to_string(o.max_output_bytes >> 20));
    sub.add_option_function<std::size_t>(
           "--max-memory-mib", [&o](const std::size_t& mib) { o.max_memory_bytes = mib << 20; },
           "Data memory each CPU runner process may allocate (RLIMIT_DATA: the checker and the candidate's host, "
           "each), MiB; past it the candidate's allocation fails and it is rejected. 0: no limit. Default: three "
           "quarters of this machine's memory. CUDA runners and Python workers of a GPU op are not limited")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));  // no default shown: it is this machine's
}


void add_workspace_option(CLI::App& sub, std::string& workspace) {
    sub.add_option("--workspace", workspace,
                   "The loop's workspace (default: the single profile/<op>-opt/ of the current git repository)");
}

std::filesystem::path resolve_workspace(const std::string& given, platform::command_runner_base& runner) {
    if (!given.empty()) return loop::find_workspace(std::filesystem::path(given), {});
    return loop::find_workspace(std::nullopt, platform::git_state_of(std::filesystem::current_path(), runner));
}

std::filesystem::path memory_db_path() {
    if (const char* p = std::getenv("KLOOP_MEMORY_DB"); p != nullptr && *p != '\0') return std::filesystem::absolute(p);
    return loop::default_memory_path();
}

}  // namespace kloop::cli
