// kloop cli: `kloop verify` — gate and bench one candidate.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_verify_command();

}  // namespace kloop::cli
