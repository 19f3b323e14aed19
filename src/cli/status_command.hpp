// kloop cli: `kloop status` — see status_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_status_command();

}  // namespace kloop::cli
