// kloop eval/record: the environment an evaluation records (host, compiler, kloop's build, git).
//
// Responsibility: fill eval::environment_info for one evaluation context, the same way for every
// pipeline (kloop's, or a backend's own).
#pragma once

#include "eval/record/context.hpp"
#include "eval/record/evaluation.hpp"

namespace kloop::eval {

// The environment line: host, compiler, kloop build, the candidate's git state.
[[nodiscard]] environment_info collect_environment(const evaluation_context& ctx);

}  // namespace kloop::eval
