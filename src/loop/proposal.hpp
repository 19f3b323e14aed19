// kloop loop: the optimisation proposal of one iteration (optimization_proposal.md).
//
// Responsibility: read what the engineer (or agent) says an iteration tries, before it is
// measured. The file is Markdown with three required parts:
//   Direction: <one change, in a sentence>          (or a "## Direction" section)
//   Expected: <a prediction: which shapes move, by how much>   (or "## Expected")
//   ## Strategy tags
//   - <tag>                                         (bullets; commas split a line into tags)
// and two optional parts:
//   Prediction: <claim>     (one per line, or bullets under "## Prediction" / "## Predictions";
//                            the grammar: loop/record/prediction.hpp) — scored after the A/B
//   Blocked-override: <why this time differs>   (or a "## Blocked override" section) — the
//                            written reason to retry a strategy the memory blocks
// Anything else (rationale, profile signals) is kept verbatim in the iteration's copy.
// Missing parts throw kloop::usage_error naming the file and the part; a malformed prediction
// names the file and its line.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "loop/record/prediction.hpp"

namespace kloop::loop {

struct proposal {
    std::string direction;
    std::string expected;
    std::vector<std::string> tags;         // as written
    std::vector<prediction> predictions;   // machine-readable, in file order
    std::string blocked_override;          // "" when the proposal gives no reason
    std::string text;                      // the whole file
};

// A proposal the loop will not measure as it stands (a run that requires a prediction, a blocked
// strategy without an override reason): says what is missing and how to write it. Exit code 2.
class proposal_refused : public usage_error {
public:
    explicit proposal_refused(const std::string& message) : usage_error(message) {}
};

[[nodiscard]] proposal parse_proposal(const std::string& text, const std::string& file_for_messages);
[[nodiscard]] proposal read_proposal(const std::filesystem::path& file);

}  // namespace kloop::loop
