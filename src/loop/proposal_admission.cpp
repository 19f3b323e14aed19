// kloop loop: the rules a proposal meets before it is measured (see proposal_admission.hpp).
#include "loop/proposal_admission.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loop/fingerprint.hpp"

namespace kloop::loop {

namespace {

constexpr const char* how_to_override =
    "say why this time differs with a `Blocked-override: <why this time differs>` line (or a `## Blocked override` section)";

std::string blocked_text(const std::string& fingerprint, const proposal& p, const fingerprint_summary& f) {
    return fmt::format("strategy fingerprint {} ({}) is BLOCKED by the memory: {} positive, {} negative, {} rejected in {} "
                       "loop(s) on this op, backend, device and shape set",
                       fingerprint, fmt::join(normalise_tags(p.tags), ", "), f.positive, f.negative, f.rejected, f.runs);
}

}  // namespace

std::vector<std::string> admit_proposal(const proposal& p, const std::string& file, const std::string& fingerprint,
                                        const std::optional<fingerprint_summary>& memory, const admission_rules& rules) {
    std::vector<std::string> warnings;
    if (p.predictions.empty()) {
        if (rules.require_prediction)
            throw proposal_refused(fmt::format("proposal '{}' has no machine-readable prediction, and this run measures only "
                                               "predictions it can score. Add {}",
                                               file, prediction_grammar()));
        warnings.push_back("no machine-readable prediction: it cannot be scored (add `Prediction: speedup 1.1-1.3` or another "
                           "claim; docs/loop.md, \"Predictions\")");
    }
    if (memory && memory->is_blocked()) {
        if (p.blocked_override.empty()) {
            if (rules.enforce_blocked)
                throw proposal_refused(fmt::format("proposal '{}': {}, and this run does not retry a blocked strategy without a "
                                                   "reason. Pick another direction, or {}",
                                                   file, blocked_text(fingerprint, p, *memory), how_to_override));
            warnings.push_back(blocked_text(fingerprint, p, *memory) + ". Pick another direction unless the proposal says why "
                               "this time differs: " + how_to_override);
        } else {
            warnings.push_back(blocked_text(fingerprint, p, *memory) + "; retried with the proposal's reason: " + p.blocked_override);
        }
    }
    return warnings;
}

}  // namespace kloop::loop
