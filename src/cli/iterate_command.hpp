// kloop cli: `kloop iterate` — see iterate_command.cpp and docs/loop.md.
#pragma once

#include <iosfwd>
#include <memory>

#include "cli/command.hpp"
#include "loop/iteration.hpp"

namespace kloop::cli {

[[nodiscard]] std::unique_ptr<command_base> make_iterate_command();

// What `kloop iterate` prints of a recorded iteration (warnings and notes, status and reason,
// the per-shape A/B, the prediction, where it is recorded, git, the next step); `kloop tune`
// prints its end iteration the same way.
void print_iteration_outcome(const loop::iterate_outcome& out, std::ostream& os, std::ostream& err);

}  // namespace kloop::cli
