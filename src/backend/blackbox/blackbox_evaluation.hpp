// kloop backend/blackbox: evaluating a candidate of a black-box op (an existing repository's own gate
// and bench commands) into kloop's usual evaluation record.
//
// Responsibility: the black-box backend's own pipeline (backend/blackbox/blackbox_backend): the
// counterparts of eval::evaluate, eval::compare_candidates and eval::retime_candidates for a spec
// in black-box mode (docs/blackbox.md). Each command runs in a fresh temporary copy of the repository root with
// the candidate placed at the spec's target (repo_copy), under a clean recorded environment
// (gate_env, after refusing gate-weakening variables), through kloop's subprocess layer with its
// timeout. The gate is green only on exit 0 AND a pytest summary line with at least one passed
// test and no failure or error; the bench runs only after a green gate and prints raw samples
// that kloop summarises itself (measure/statistics) and, for an A/B, compares with the same
// bootstrap as native ops (measure/ab_comparison), the two sides' bench runs interleaved.
//
// Outcome model, as for native ops: what the candidate does is data in the record (a red gate,
// a crash, a hang, a malformed bench output); exceptions are for the user's or the
// environment's problems — a refused variable, a command that cannot start (usage_error, exit 2),
// an interruption (exit 130).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/record/ab_result.hpp"
#include "eval/record/context.hpp"
#include "eval/record/evaluation.hpp"

namespace kloop::backend::blackbox {

// Gate (and bench unless options.bench is false) of ctx.candidate. ctx.spec.blackbox must be set.
[[nodiscard]] eval::evaluation evaluate(const eval::evaluation_context& ctx);

// Both sides gated (no bench), then, when both are green, spec.bench.rounds rounds of bench runs
// alternating the order (base, candidate / candidate, base ...), samples pooled per side and
// compared per shape and overall.
[[nodiscard]] eval::ab_evaluation compare(const eval::ab_context& ctx);

// The A/B timing of compare() again without re-gating (`kloop noise`). `gated` must be timed.
[[nodiscard]] eval::ab_evaluation retime(const eval::ab_context& ctx, const eval::ab_evaluation& gated, int run);

// Parses the bench command's stdout: the last line that is a JSON object with a "shapes" array
// (docs/blackbox.md, "Bench output"). Per expected shape key ("mode/name") the samples in seconds.
// Throws std::invalid_argument with a message naming the problem (missing, unknown or repeated
// shape, empty or non-finite or non-positive samples, no JSON line).
struct bench_output_shape {
    std::string mode;
    std::string name;
    std::vector<double> samples_s;
    std::optional<double> flops;
    std::optional<double> bytes;
};
[[nodiscard]] std::vector<bench_output_shape> parse_bench_output(const std::string& stdout_text,
                                                                 const std::vector<spec::blackbox_bench_shape>& expected);

}  // namespace kloop::backend::blackbox
