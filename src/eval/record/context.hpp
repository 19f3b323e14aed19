// kloop eval/record: what one evaluation (or one A/B) is asked to do, and with what.
//
// Responsibility: the two request structs every verb fills and every pipeline reads — the spec,
// the candidate (or the two sides), the options, the command runner (tests fake it), the build
// cache and the scratch directory where jobs, events and logs go. Plain data; no behaviour.
#pragma once

#include <filesystem>
#include <vector>

#include "eval/record/evaluation_options.hpp"
#include "measure/ab_comparison.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

struct evaluation_context {
    const spec::op_spec& spec;
    std::filesystem::path candidate;       // source file
    evaluation_options options;
    platform::command_runner_base& commands;
    std::filesystem::path cache_dir;       // build cache
    std::filesystem::path scratch_dir;     // where jobs, events and runner logs go
    // Black-box ops (docs/blackbox.md): where a loop keeps its stable repository copies and its
    // green gates (the workspace's .cache/; empty: copies under scratch_dir, nothing stored), and
    // whether a stored green gate of byte-identical inputs may stand in for running this one.
    std::filesystem::path state_dir{};
    bool reuse_green_gate = false;
    // Black-box ops: files of the loop inside the repository that no copy holds (an iteration's
    // proposal, often written at the repository's root): never what a gate or bench reads, and
    // left in they would make the base's copy differ from the bytes whose gate passed.
    std::vector<std::filesystem::path> leave_out{};
};

struct ab_context {
    const spec::op_spec& spec;
    std::filesystem::path base;            // a source file (a git ref is resolved by the caller)
    std::filesystem::path candidate;
    evaluation_options options;            // gate options and the stopping rule per side
    measure::ab_config ab;
    platform::command_runner_base& commands;
    std::filesystem::path cache_dir;
    std::filesystem::path scratch_dir;
    std::filesystem::path state_dir{};     // as evaluation_context::state_dir (black-box ops)
    bool reuse_base_gate = false;          // the base's green gate may be reused (an iteration's base)
    std::vector<std::filesystem::path> leave_out{};  // as evaluation_context::leave_out
};

}  // namespace kloop::eval
