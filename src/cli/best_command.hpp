// kloop cli: `kloop best` — see best_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_best_command();

}  // namespace kloop::cli
