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
// bootstrap as native ops (measure/ab_comparison): both sides timed in one bench process per
// round where the bench can (`[bench] sides`, interleaved per sample), else the two sides' bench
// runs interleaved ABBA by round. In a loop (a state directory given) copies live at stable
// paths and green gates are stored; an iteration's base reuses its stored green gate when the
// repository's bytes, the command and the environment are the same (gate_reuse).
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
#include "backend/blackbox/bench_output.hpp"

namespace kloop::backend::blackbox {

// Gate (and bench unless options.bench is false) of ctx.candidate. ctx.spec.blackbox must be set.
[[nodiscard]] eval::evaluation evaluate(const eval::evaluation_context& ctx);

// Both sides gated (no bench), then, when both are green, spec.bench.rounds rounds of bench runs
// alternating the order (base, candidate / candidate, base ...), samples pooled per side and
// compared per shape and overall.
[[nodiscard]] eval::ab_evaluation compare(const eval::ab_context& ctx);

// The A/B timing of compare() again without re-gating (`kloop noise`). `gated` must be timed.
[[nodiscard]] eval::ab_evaluation retime(const eval::ab_context& ctx, const eval::ab_evaluation& gated, int run);

}  // namespace kloop::backend::blackbox
