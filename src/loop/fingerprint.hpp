// kloop loop: the strategy fingerprint of a proposal.
//
// Responsibility: the key strategy memory groups iterations by. fingerprint = first 16 hex of
// SHA-256 over the backend and the normalised, sorted, de-duplicated tags — so renaming a
// candidate file, reordering tags or writing "Loop_Fusion" for "loop fusion" keeps the key.
// Normalising a tag: lower case; backticks dropped; runs of spaces, '_' and '-' become one '-';
// leading/trailing '-' trimmed.
#pragma once

#include <string>
#include <vector>

namespace kloop::loop {

[[nodiscard]] std::string normalise_tag(const std::string& tag);
// Normalised, sorted, unique; empty tags dropped.
[[nodiscard]] std::vector<std::string> normalise_tags(const std::vector<std::string>& tags);
[[nodiscard]] std::string fingerprint_of(const std::string& backend, const std::vector<std::string>& tags);

}  // namespace kloop::loop
