// kloop report: OPT_LOG.md — the one-row-per-iteration log of the loop.
//
// Responsibility: the log's header (Env / Baseline / Target, then the table) and its rows:
//   | Iter | Direction | Gate | Bench median per shape (ms) | Predicted | vs best | Status |
// The file is the user's too (they add notes, the floor evidence of a stop), so kloop never
// rewrites it from scratch: append_missing_rows() adds the rows of recorded iterations that are
// not in it yet (matched by the "| vN |" cell) and leaves every other line alone — which is also
// how a command killed between recording an iteration and logging it is repaired.
#pragma once

#include <string>
#include <vector>

#include "loop/record/contract.hpp"
#include "loop/record/iteration_record.hpp"

namespace kloop::report {

[[nodiscard]] std::string opt_log_header(const loop::contract& c, const loop::iteration_record& baseline, const std::string& env_line);
[[nodiscard]] std::string opt_log_row(const loop::iteration_record& r);
// Returns the new text (unchanged when every record already has its row).
[[nodiscard]] std::string append_missing_rows(const std::string& log, const std::vector<loop::iteration_record>& records);

}  // namespace kloop::report
