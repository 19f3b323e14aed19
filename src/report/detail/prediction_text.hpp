// kloop report (detail): how the loop's documents write a prediction and its score.
#pragma once

#include <string>

#include <fmt/format.h>

#include "loop/record/iteration_record.hpp"

namespace kloop::report::detail {

// The Predicted cell of OPT_LOG.md and final_summary.md: the free text, then "pred 2/3 hit".
inline std::string predicted_cell(const loop::iteration_record& r) {
    const auto brief = loop::predictions_brief(r.predictions);
    return brief.empty() ? r.expected : r.expected + " (" + brief + ")";
}

// "x1.080", "62.5"; "—" when absent.
inline std::string measured_text(const loop::scored_prediction& p) {
    if (!p.score.measured) return "—";
    return p.claim.kind == loop::prediction_kind::profile ? fmt::format("{:.4g}", *p.score.measured)
                                                          : fmt::format("x{:.3f}", *p.score.measured);
}

}  // namespace kloop::report::detail
