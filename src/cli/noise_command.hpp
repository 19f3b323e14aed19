// kloop cli: `kloop noise` — A against A, N times: the noise floor and the false-verdict rate.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_noise_command();

}  // namespace kloop::cli
