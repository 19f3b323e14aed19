// kloop loop/record: machine-readable predictions of a proposal, registered before the
// measurement and scored after it.
//
// Responsibility: the grammar of one prediction claim, its parser, and its score — a pure
// function of the iteration record (tests need no GPU). A proposal writes its claims as
// `Prediction: <claim>` lines or bullets under `## Prediction(s)` (loop/proposal). A claim
// (case-insensitive, whitespace tolerant) is one of
//   speedup RANGE                 the overall equal-weight geomean speedup vs the current best
//   MODE/SHAPE speedup RANGE      that bench shape's speedup (fwd/n4096_d1024 speedup 1.1-1.3)
//   no change                     the overall A/B verdict is SAME
//   MODE/SHAPE no change          that shape's verdict is SAME
//   profile METRIC RANGE          a fact of the candidate's profile (loop/record/profile_facts)
// and RANGE is `A-B`, `A..B`, `>=A` (or `≥A`: no upper bound) or `<=B` (`≤B`); a number may
// carry an `x` (x1.2) or a `%`.
// Scores: hit | miss | unscored (with the reason: rejected before timing, no such shape, no
// profile, …), the measured value, and off_by — how far out: measured / upper bound when above,
// measured / lower bound when below, 1 on a hit; for `no change`, the measured speedup on a miss.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::loop {

struct iteration_record;

enum class prediction_kind { speedup, no_change, profile };
[[nodiscard]] std::string to_string(prediction_kind k);

struct prediction {
    prediction_kind kind = prediction_kind::speedup;
    std::string scope;                   // "" = overall; else "MODE/SHAPE"
    std::string metric;                  // the profile fact (kind profile)
    std::optional<double> low, high;     // the range; an absent side is unbounded
    std::string text;                    // the claim as written
    int line = 0;                        // its line in the proposal (0: unknown)
};

enum class prediction_outcome { hit, miss, unscored };
[[nodiscard]] std::string to_string(prediction_outcome o);

struct prediction_score {
    prediction_outcome outcome = prediction_outcome::unscored;
    std::optional<double> measured;
    std::optional<double> off_by;
    std::string reason;                  // why unscored; "" otherwise
};

struct scored_prediction {
    prediction claim;
    prediction_score score;              // unscored ("not measured yet") until the iteration ends
};

// The grammar in one paragraph, for error messages and the refusal of a proposal without claims.
[[nodiscard]] std::string_view prediction_grammar();

// Parses one claim; throws kloop::usage_error naming `file`, `line`, the claim and the grammar.
// An unknown profile metric is refused with the known names.
[[nodiscard]] prediction parse_prediction(const std::string& claim, const std::string& file, int line);

// The score of one claim against the finished iteration's record (A/B and profile facts).
[[nodiscard]] prediction_score score_prediction(const prediction& p, const iteration_record& r);
// Scores every claim of r.predictions in place.
void score_predictions(iteration_record& r);

// "pred 2/3 hit" (hits of the scored ones, "; 1 unscored" when some are); "" without predictions.
[[nodiscard]] std::string predictions_brief(const std::vector<scored_prediction>& ps);

[[nodiscard]] nlohmann::json to_json(const scored_prediction& p);
[[nodiscard]] scored_prediction scored_prediction_from_json(const nlohmann::json& j);

}  // namespace kloop::loop
