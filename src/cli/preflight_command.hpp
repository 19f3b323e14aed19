// kloop cli: `kloop preflight` — is this machine fit to gate, time and profile kernels?
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_preflight_command();

}  // namespace kloop::cli
