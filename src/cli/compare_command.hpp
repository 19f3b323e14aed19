// kloop cli: `kloop compare` — A/B of two versions, interleaved in one runner — and the pieces
// `kloop verify --base` and `kloop noise` share with it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "eval/ab_evaluation.hpp"

namespace CLI {
class App;
}

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_compare_command();

// The timing options of an A/B run (stopping rule per side, checked calls, runner timeout),
// declared with the same names and help as `kloop verify`'s.
void declare_ab_timing_options(CLI::App& sub, eval::evaluation_options& options);

// Resolves --base (a file, or a git ref in a temporary worktree that is always removed), runs
// eval::compare_candidates against `candidate`, and labels the result. `keep_dir` (may be
// empty) keeps the runners' jobs, events and logs.
[[nodiscard]] eval::ab_evaluation compare_with_base(const spec::op_spec& spec, const std::string& base_arg,
                                                    const std::filesystem::path& candidate,
                                                    const std::string& candidate_label,
                                                    const eval::evaluation_options& options,
                                                    const measure::ab_config& config,
                                                    const std::vector<std::string>& command_line,
                                                    const std::string& keep_dir);

class base_checkout;

// The same, for a base already resolved (`kloop verify --base` resolves it before verifying, so a
// bad ref fails at once).
[[nodiscard]] eval::ab_evaluation compare_with_base(const spec::op_spec& spec, const base_checkout& base,
                                                    const std::filesystem::path& candidate,
                                                    const std::string& candidate_label,
                                                    const eval::evaluation_options& options,
                                                    const measure::ab_config& config,
                                                    const std::vector<std::string>& command_line,
                                                    const std::string& keep_dir,
                                                    platform::command_runner_base& commands);

// 0 when both sides were timed (whatever the verdict), 4 when a side failed to build, 3 when a
// gate is red or a timed call failed or crashed.
[[nodiscard]] int compare_exit_code(const eval::ab_evaluation& ab);

}  // namespace kloop::cli
