// kloop cli: options shared by the loop's verbs (init, iterate, report, demo, status, ...).
//
// Responsibility: one source of truth for the options several loop verbs take — the stopping
// rule (cli/timing_options), the runner timeout and limits, the held-out shapes, the profile
// step, --workspace — and the helpers that resolve the
// workspace and the strategy-memory database ($KLOOP_MEMORY_DB, else
// platform::kloop_home()/memory.sqlite).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "eval/record/evaluation_options.hpp"
#include "loop/iteration.hpp"
#include "loop/version_profile.hpp"
#include "measure/ab_comparison.hpp"

namespace CLI {
class App;
}

namespace kloop::platform {
class command_runner_base;
}

namespace kloop::cli {

// add_bench_options declares --held-out too (add_held_out_option).
void add_bench_options(CLI::App& sub, eval::evaluation_options& options);
// --held-out N: held-out shapes the gate draws per mode from the spec's domains (0: none).
void add_held_out_option(CLI::App& sub, eval::evaluation_options& options);
// --compile-timeout, --max-output-mib: what a compiler may take and what a runner's logs keep
// (every verb that builds and runs candidates; add_bench_options declares them too).
void add_runner_limit_options(CLI::App& sub, eval::evaluation_options& options);
// --no-profile, --profile-timeout: the loop's Nsight Compute step (loop/version_profile.hpp).
void add_profile_options(CLI::App& sub, loop::profile_options& profile);
void add_workspace_option(CLI::App& sub, std::string& workspace);
// What decides one iteration's evaluation and verdict: the bench options, the profile step, the
// minimum effect, --allow-unconfined and --require-quiet (`kloop iterate`, `kloop run`, and the
// Slurm task of a parallel round, `kloop evaluate-sibling`, which gets them forwarded).
void add_iteration_options(CLI::App& sub, loop::iterate_request& req);

// --workspace when given, else the single profile/*-opt/ of the current repository.
[[nodiscard]] std::filesystem::path resolve_workspace(const std::string& given, platform::command_runner_base& runner);
[[nodiscard]] std::filesystem::path memory_db_path();

}  // namespace kloop::cli
