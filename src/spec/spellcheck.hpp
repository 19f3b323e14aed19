// kloop spec: near-miss suggestions for misspelt names ("did you mean 'atol'?").
//
// Responsibility: an edit distance (optimal string alignment: insertions, deletions,
// substitutions and adjacent transpositions each cost 1) and the choice of the closest known
// word within a length-dependent threshold, in the manner of ninja's SpellcheckString.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kloop::spec {

[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo: one that
// differs only in case, else (for words of 3+ characters) the nearest within distance 1 for
// words up to 4 characters, 2 up to 8, 3 beyond. Ties go to the first listed.
[[nodiscard]] std::optional<std::string> closest_match(std::string_view word,
                                                       const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to a message.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates);

}  // namespace kloop::spec
