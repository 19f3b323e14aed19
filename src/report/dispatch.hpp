// kloop report: dispatch.md — the evidence for each shape-specialised path (phase 3).
//
// Responsibility: the table a specialised path must have a row in, or it is unjustified
// complexity:
//   | Bucket condition | Entry point | Baseline ms | Candidate ms | Speedup | Why this path |
// `kloop dispatch` appends a row. The numbers either come from a recorded A/B (an iteration
// and a mode/shape of it: the best side and the candidate side of the same interleaved run) or
// are given by hand, and the row says which.
#pragma once

#include <optional>
#include <string>

namespace kloop::report {

struct dispatch_entry {
    std::string bucket;        // "T <= 512", "D % 8 != 0"
    std::string entry;         // the entry point / path taken in that bucket
    double baseline_ms = 0;
    double candidate_ms = 0;
    std::string why;           // the profile signal or bound that justifies the path
    std::string source;        // "A/B of v3, fwd/n1000_d777" or "given by hand"
};

[[nodiscard]] std::string dispatch_header(const std::string& op);
// Throws kloop::usage_error for empty text fields or non-positive times.
[[nodiscard]] std::string dispatch_row(const dispatch_entry& e);
[[nodiscard]] std::string append_dispatch_row(const std::string& existing, const std::string& op, const dispatch_entry& e);

}  // namespace kloop::report
