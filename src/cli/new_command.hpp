// kloop cli: `kloop new` — see new_command.cpp and docs/fla.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_new_command();

}  // namespace kloop::cli
