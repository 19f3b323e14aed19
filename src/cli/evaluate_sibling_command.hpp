// kloop cli: `kloop evaluate-sibling TASK_DIR` — see evaluate_sibling_command.cpp.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_evaluate_sibling_command();

}  // namespace kloop::cli
