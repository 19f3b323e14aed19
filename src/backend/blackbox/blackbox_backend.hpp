// kloop backend/blackbox: the black-box backend — an op that lives in an existing repository,
// evaluated by the repository's own gate and bench commands in a temporary copy
// (blackbox_evaluation, docs/blackbox.md). It brings its own pipeline; kloop builds and runs
// nothing of the candidate, so it has no runner, no artefact check and nothing ncu could profile.
// What its candidate is made of (the files staged by the loop) follows the op's language.
#pragma once

#include "backend/backend.hpp"

namespace kloop::backend::blackbox {

[[nodiscard]] const op_backend& blackbox_backend();

}  // namespace kloop::backend::blackbox
