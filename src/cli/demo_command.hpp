// kloop cli: `kloop demo` — see demo_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_demo_command();

}  // namespace kloop::cli
