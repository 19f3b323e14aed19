// kloop report: iteration_summary.md — the human-readable page of one iteration.
//
// Responsibility: format an iteration_record (status and reason, the proposal's direction,
// predicted vs measured, per-shape A/B table, git and profile state, warnings). Formatting only.
#pragma once

#include <string>

#include "loop/record/iteration_record.hpp"

namespace kloop::report {

[[nodiscard]] std::string iteration_summary_md(const loop::iteration_record& r, const std::string& op);

}  // namespace kloop::report
