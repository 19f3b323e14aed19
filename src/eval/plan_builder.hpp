// kloop eval: turn an op spec and evaluation options into runner jobs.
//
// Responsibility: resolve every (mode, shape) the run covers into a runner::call_plan (concrete
// shapes from dim expressions, params, tolerances), choose the gate seeds (the spec's two fixed
// seeds plus seeds drawn now, so no candidate can know them in advance), apply --mode and
// --gate-k, and lay out the gate cases and bench items. Pure: no I/O, no processes.
//
// The gate covers, per selected mode: every listed gate shape with the first distribution of
// every input; then, per gate shape, one call per further (adversarial) distribution of an input,
// that input drawn from it and the others from their first, named "<shape>[<input>=<init>]";
// then the held-out shapes (spec/held_out) drawn from the drawn trial's seed, named
// "heldout_<k>", with their own dims and params, each with its distribution calls too. Every
// call runs every trial seed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "eval/record/evaluation.hpp"
#include "eval/record/evaluation_options.hpp"
#include "runner/job.hpp"
#include "spec/held_out.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

// Seeds for trials 0..n-1: the spec's fixed seeds, then `drawn` (and drawn+k for more trials).
[[nodiscard]] std::vector<std::uint64_t> gate_seeds(const spec::op_spec& s, int trials, std::uint64_t drawn);

// A fresh seed from std::random_device (the "drawn at check time" trial).
[[nodiscard]] std::uint64_t draw_seed();

// The spec's cost formulas evaluated at one call's dims; empty where the mode has none.
struct call_cost {
    std::optional<double> flops;
    std::optional<double> bytes;
};
[[nodiscard]] call_cost spec_cost(const spec::op_spec& s, const runner::call_plan& plan);

// Throws usage_error if --mode names an unknown mode or --gate-k selects no gate shape.
[[nodiscard]] runner::job build_gate_job(const spec::op_spec& s, const evaluation_options& o,
                                         const std::vector<std::uint64_t>& seeds);

// The seed the held-out draw uses: derived from the drawn trial's seed (seeds[2]; the last seed
// when fewer are given), so `--seed` replays the draw.
[[nodiscard]] std::uint64_t held_out_seed(const std::vector<std::uint64_t>& seeds);
// The held-out shapes build_gate_job adds for these seeds and options (o.held_out of them).
[[nodiscard]] std::vector<spec::held_out_shape> draw_gate_held_out(const spec::op_spec& s, const evaluation_options& o,
                                                                   const std::vector<std::uint64_t>& seeds);
// The gate's held-out calls as the evaluation records them (mode, shape, dims, params).
[[nodiscard]] std::vector<held_out_call> held_out_calls(const runner::job& gate_job);
// "<shape>[<input>=<init>]": the name of a gate call that draws `input` from an adversarial init.
[[nodiscard]] std::string distribution_case_name(const std::string& shape, const std::string& input,
                                                 const std::string& init_text);
// `evict_bytes`: cold traffic wanted between two uses of one input set (2 x last-level cache).
// Each bench item rotates enough input sets (each with its own buffers) to cover it, within a
// memory budget; what rotation cannot cover is written by an explicit flush between samples.
[[nodiscard]] runner::job build_bench_job(const spec::op_spec& s, const evaluation_options& o,
                                          std::uint64_t seed, std::uint64_t evict_bytes);

struct rotation_plan {
    int input_sets = 2;
    std::uint64_t flush_bytes = 0;
};
// sets = ceil(evict / set_bytes) + 1 clamped to [2, 64] and to memory_budget / set_bytes;
// flush = evict - (sets - 1) * set_bytes when positive. `fixed_sets` > 0 forces the set count.
[[nodiscard]] rotation_plan plan_rotation(std::uint64_t set_bytes, std::uint64_t evict_bytes, int fixed_sets,
                                          std::uint64_t memory_budget = std::uint64_t{1} << 30);

}  // namespace kloop::eval
