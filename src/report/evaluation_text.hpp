// kloop report: the terse console view of one evaluation (`kloop verify` without --json).
//
// Responsibility: environment line, build lines, the gate verdict with every failed case and its
// reason, the bench table and the integrity checks. Formatting only; the JSON record is the
// complete one.
#pragma once

#include <string>

#include "eval/record/evaluation.hpp"

namespace kloop::report {

[[nodiscard]] std::string environment_line(const eval::environment_info& env);

// The closing lines of every evaluation's text: the integrity checks (each fail and warn with its
// detail) and the result line.
[[nodiscard]] std::string integrity_and_result_lines(const eval::evaluation& e);
// "  candidate time: 84.2 s over 80 cases; slowest fwd/heldout_1 trial 2: 31.0 s (...)" when a
// case took the candidate a second or more or the runner failed; else "".
[[nodiscard]] std::string slowest_case_line(const eval::gate_report& g);
[[nodiscard]] std::string to_text(const eval::evaluation& e);

}  // namespace kloop::report
