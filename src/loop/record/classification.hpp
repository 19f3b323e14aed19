// kloop loop/record: classify one iteration against the current best.
//
// Responsibility: the loop's classification rule (docs/loop.md) as a pure function over the A/B result, so it is
// tested on synthetic structs (tests/unit/loop/classification_test.cpp):
//   rejected   the candidate failed to build, failed the gate (wrong result, crash, timeout,
//              integrity check), or its timed calls failed (checked timed call wrong, crash or
//              timeout during the bench) — kind says which;
//   positive   both sides green and timed, and the overall equal-weight geomean verdict of
//              compare_candidates(best, candidate) is FASTER (its bootstrap interval clears the
//              noise margin min_effect);
//   negative   otherwise (SAME, SLOWER or AMBIGUOUS overall).
// The per-shape verdicts are kept by the caller (loop/record/iteration_record). A best that fails its
// own gate in the comparison is not the candidate's fault: classify throws kloop::error
// (gate_red) and no iteration is recorded.
#pragma once

#include <optional>
#include <string>

#include "eval/record/ab_result.hpp"
#include "eval/record/evaluation.hpp"
#include "measure/ab_comparison.hpp"

namespace kloop::loop {

enum class iteration_status { baseline, positive, negative, rejected };
[[nodiscard]] std::string to_string(iteration_status s);
[[nodiscard]] iteration_status iteration_status_from_string(const std::string& s);  // throws std::invalid_argument

enum class rejection_kind { none, build, gate, crash, timeout, integrity, bench };
[[nodiscard]] std::string to_string(rejection_kind k);
[[nodiscard]] rejection_kind rejection_kind_from_string(const std::string& s);  // throws std::invalid_argument

struct classification {
    iteration_status status = iteration_status::rejected;
    rejection_kind kind = rejection_kind::none;
    std::string reason;
    std::optional<measure::ab_result> overall;
};

// Why a gated-out evaluation failed: build / crash / timeout / integrity / gate.
[[nodiscard]] rejection_kind rejection_kind_of(const eval::evaluation& e);
// The evaluation's reason with the first failing case (or the runner failure, or the first
// compiler error line) appended.
[[nodiscard]] std::string rejection_reason_of(const eval::evaluation& e);

[[nodiscard]] classification classify(const eval::ab_evaluation& ab, const std::string& best_label);

}  // namespace kloop::loop
