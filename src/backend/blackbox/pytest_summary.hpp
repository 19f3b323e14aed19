// kloop backend/blackbox: reading pytest's verdict out of its console output.
//
// Responsibility: the black-box gate runs a repository's own pytest command and trusts only two
// facts: the exit status, and pytest's final summary line. This module finds that line in the
// captured output and turns it into counts; it also collects the "FAILED <node id> - <message>"
// and "ERROR <node id>" lines of pytest's short test summary, so a red gate names its tests.
//
// What it understands (colour codes stripped first, any pytest from 5 to 8):
//   "============ 3 passed, 1 skipped in 0.12s ============"   (default verbosity)
//   "3 passed, 1 skipped in 0.12s"                            (-q)
//   "1 failed, 2 passed, 3 warnings in 1.20s (0:00:01)"
//   "= no tests ran in 0.01s =", "12 deselected in 0.19s", "1 error in 0.10s"
//   "2 passed in 0.50 seconds"                                (pytest < 5)
// The summary is the last line of that form: a candidate's own output, which pytest prints
// earlier (captured-output sections), cannot stand in for it. `-qq` prints no summary at all; a
// run without one is never green (blackbox_evaluation).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/record/repository_run.hpp"

namespace kloop::backend::blackbox {

using eval::pytest_summary;
using eval::reported_failure;
using eval::max_reported_failures;

// Removes ANSI escape sequences (CSI "ESC [ ... letter", charset "ESC ( B", two-byte "ESC x").
[[nodiscard]] std::string strip_ansi(std::string_view text);

// Parses the combined stdout and stderr of a pytest run. Never throws.
[[nodiscard]] pytest_summary parse_pytest_output(std::string_view output);

// Parses one candidate summary line (already stripped); nullopt when it is not one.
[[nodiscard]] std::optional<pytest_summary> parse_summary_line(std::string_view line);

// pytest's documented exit codes: 0 all passed, 1 tests failed, 2 interrupted, 3 internal
// error, 4 usage error, 5 no tests collected. "exit 3 (pytest internal error)".
[[nodiscard]] std::string describe_pytest_exit(int exit_code);

}  // namespace kloop::backend::blackbox
