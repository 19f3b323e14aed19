// kloop cli: `kloop show` — see show_command.cpp and docs/report.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_show_command();

}  // namespace kloop::cli
