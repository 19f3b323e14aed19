// kloop report: the table of a `kloop tune` — every point of its search — and tune_vN.md.
//
// Responsibility: format a loop::tune_result: one row per point (configuration, gate, speedup
// against the incumbent of its time with the 95% interval, verdict, note), and the page that
// holds it with the search, the start, the choice and the iteration the tune ended in.
// Formatting only.
#pragma once

#include <string>

#include "loop/record/tune_record.hpp"

namespace kloop::report {

// The Markdown table of every point (also what `kloop tune` prints).
[[nodiscard]] std::string tune_points_table(const loop::tune_result& r);

struct tune_page_context {
    std::string op;
    std::string candidate;       // the candidate file the search wrote its choice over
    std::string iteration;       // "v3": the iteration the tune ends in
    std::string outcome;         // that iteration's result line; "" while it runs
};

// tune_vN.md.
[[nodiscard]] std::string tune_page_md(const loop::tune_result& r, const tune_page_context& ctx);

// "x1.120 [1.050, 1.200]".
[[nodiscard]] std::string speedup_text(const measure::ab_result& v);

}  // namespace kloop::report
