// kloop cli: `kloop iterate` — see iterate_command.cpp and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_iterate_command();

}  // namespace kloop::cli
