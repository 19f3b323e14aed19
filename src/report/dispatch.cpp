// kloop report: dispatch.md (see dispatch.hpp).
#include "report/dispatch.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "report/detail/markdown.hpp"

namespace kloop::report {

using detail::md_cell;

std::string dispatch_header(const std::string& op) {
    return fmt::format(
        "# dispatch — {}\n\n"
        "One row per shape-specialised path. A path without a row here is unjustified complexity. Add rows with\n"
        "`kloop dispatch --bucket COND --entry NAME (--iteration N --shape MODE/SHAPE | --baseline-ms X --candidate-ms Y) "
        "--why TEXT`.\n\n"
        "| Bucket condition | Entry point | Baseline ms | Candidate ms | Speedup | Why this path | Source |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n",
        op);
}

std::string dispatch_row(const dispatch_entry& e) {
    if (e.bucket.empty()) throw usage_error("option --bucket: the bucket condition must not be empty");
    if (e.entry.empty()) throw usage_error("option --entry: the entry point must not be empty");
    if (e.why.empty()) throw usage_error("option --why: say which profile signal or bound justifies this path");
    if (!(e.baseline_ms > 0) || !(e.candidate_ms > 0))
        throw usage_error(fmt::format("dispatch times must be positive (baseline {} ms, candidate {} ms)", e.baseline_ms, e.candidate_ms));
    return fmt::format("| {} | {} | {:.4g} | {:.4g} | x{:.3f} | {} | {} |\n", md_cell(e.bucket), md_cell(e.entry), e.baseline_ms,
                       e.candidate_ms, e.baseline_ms / e.candidate_ms, md_cell(e.why), md_cell(e.source));
}

std::string append_dispatch_row(const std::string& existing, const std::string& op, const dispatch_entry& e) {
    std::string out = existing.empty() ? dispatch_header(op) : existing;
    if (out.back() != '\n') out += '\n';
    return out + dispatch_row(e);
}

}  // namespace kloop::report
