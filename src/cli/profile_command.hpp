// kloop cli: `kloop profile` (see profile_command.cpp).
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_profile_command();

}  // namespace kloop::cli
