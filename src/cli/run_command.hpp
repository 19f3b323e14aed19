// kloop cli: `kloop run` — see run_command.cpp, docs/agents.md and docs/loop.md.
#pragma once

#include <memory>

#include "cli/command.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_run_command();

}  // namespace kloop::cli
