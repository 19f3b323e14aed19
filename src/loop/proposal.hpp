// kloop loop: the optimisation proposal of one iteration (optimization_proposal.md).
//
// Responsibility: read what the engineer (or agent) says an iteration tries, before it is
// measured. The file is Markdown with three required parts:
//   Direction: <one change, in a sentence>          (or a "## Direction" section)
//   Expected: <a prediction: which shapes move, by how much>   (or "## Expected")
//   ## Strategy tags
//   - <tag>                                         (bullets; commas split a line into tags)
// Anything else (rationale, profile signals) is kept verbatim in the iteration's copy.
// Missing parts throw kloop::usage_error naming the file and the part.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kloop::loop {

struct proposal {
    std::string direction;
    std::string expected;
    std::vector<std::string> tags;         // as written
    std::string text;                      // the whole file
};

[[nodiscard]] proposal parse_proposal(const std::string& text, const std::string& file_for_messages);
[[nodiscard]] proposal read_proposal(const std::filesystem::path& file);

}  // namespace kloop::loop
