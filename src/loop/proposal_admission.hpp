// kloop loop: whether an iteration measures a proposal — decided before anything is staged.
//
// Responsibility: the rules a proposal must meet before its candidate is built or timed, and
// the warnings recorded when a rule only warns:
//   no machine-readable prediction  warns ("it cannot be scored"); refused (proposal_refused)
//                                   when the caller requires a prediction;
//   a BLOCKED strategy fingerprint  warns, naming its counts; refused when the caller enforces
//                                   the block and the proposal gives no `Blocked-override:`
//                                   reason. An override reason is noted either way.
// `kloop iterate` only warns; an unattended driver (`kloop run`) sets both rules. A refusal
// says what is missing and how to write it. Pure: tested without a workspace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/proposal.hpp"
#include "loop/strategy_memory.hpp"

namespace kloop::loop {

struct admission_rules {
    bool require_prediction = false;
    bool enforce_blocked = false;
};

// The warnings to record with the iteration; throws proposal_refused when a rule refuses.
// `memory`: what the strategy memory knows of `fingerprint` under this loop's key (nullopt: nothing).
[[nodiscard]] std::vector<std::string> admit_proposal(const proposal& p, const std::string& file, const std::string& fingerprint,
                                                      const std::optional<fingerprint_summary>& memory,
                                                      const admission_rules& rules);

}  // namespace kloop::loop
