// kloop cli: `kloop dispatch` — see dispatch_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_dispatch_command();

}  // namespace kloop::cli
