// kloop report: the console view of an A/B comparison (`kloop compare`, `kloop verify --base`).
//
// Responsibility: one line per side (label, git commit and dirty flag, build, gate), the host
// line, the table (shape, base ms, new ms, speedup, confidence interval, verdict) with every
// shape — a shape that failed on one side is printed with its error, never dropped — and the
// overall geomean line. Formatting only; the JSON record (report/ab_json) is the complete one.
#pragma once

#include <string>

#include "eval/record/ab_result.hpp"

namespace kloop::report {

[[nodiscard]] std::string to_text(const eval::ab_evaluation& ab);

// "1a2b3c4d5e6f clean" | "1a2b3c4d5e6f dirty" | "not a git repository"
[[nodiscard]] std::string git_text(const eval::environment_info& env);

}  // namespace kloop::report
