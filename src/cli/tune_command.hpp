// kloop cli: `kloop tune` — see tune_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_tune_command();

}  // namespace kloop::cli
