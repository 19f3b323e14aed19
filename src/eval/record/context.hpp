// kloop eval/record: what one evaluation (or one A/B) is asked to do, and with what.
//
// Responsibility: the two request structs every verb fills and every pipeline reads — the spec,
// the candidate (or the two sides), the options, the command runner (tests fake it), the build
// cache and the scratch directory where jobs, events and logs go. Plain data; no behaviour.
#pragma once

#include <filesystem>

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
};

}  // namespace kloop::eval
