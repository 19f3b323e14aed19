// kloop eval/record: the result of an A/B — two gated sides timed interleaved, per shape and overall.
//
// Responsibility: plain data filled by eval/ab_evaluation (or by a backend that runs its own
// pipeline, backend/blackbox) and read by the loop's classification and the report's printers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/record/context.hpp"
#include "eval/record/evaluation.hpp"
#include "measure/ab_comparison.hpp"
#include "measure/sample_warnings.hpp"
#include "measure/statistics.hpp"
#include "platform/host_load.hpp"

namespace kloop::eval {

struct ab_shape_result {
    std::string mode;
    std::string shape;
    bool ok = false;                       // both sides timed and every checked call passed
    std::string error;                     // why not ok (shown, never dropped)
    std::vector<double> base_samples_s;
    std::vector<double> candidate_samples_s;
    std::optional<measure::sample_summary> base_s;
    std::optional<measure::sample_summary> candidate_s;
    std::optional<measure::ab_result> verdict;  // speedup = median(base) / median(candidate)
    // additions: how the shape was measured
    std::string base_stop_reason;          // the side's stopping rule, or the item's cap
    std::string candidate_stop_reason;
    std::string early_verdict;             // the verdict that stopped the shape early ("" = none)
    int input_sets = 0;
    std::uint64_t flush_bytes = 0;
    std::optional<double> bytes;           // the spec's bytes for this shape
    std::optional<double> flops;           // the spec's flops for this shape
    double written_bytes = 0;              // bytes of the call's outputs and in-out inputs
    int base_checks_total = 0;             // checked timed calls (new values, same addresses)
    int base_checks_failed = 0;
    int candidate_checks_total = 0;
    int candidate_checks_failed = 0;
    std::vector<measure::sample_warning> base_warnings;       // measure/sample_warnings, per side
    std::vector<measure::sample_warning> candidate_warnings;
};

struct ab_evaluation {
    std::string op;
    std::string base_label;                // file path, or "<ref>:<path>" for a git ref
    std::string candidate_label;
    evaluation base;                       // build + gate of the base (bench not run)
    evaluation candidate;                  // build + gate of the candidate (bench not run)
    std::vector<ab_shape_result> shapes;
    std::optional<measure::ab_result> overall;  // equal-weight geomean over ok shapes
    bool ok = false;                       // both gates green and every shape ok
    std::string reason;                    // why not ok
    measure::ab_config config;
    environment_info env;
    std::vector<std::string> command_line;
    // additions
    bool timed = false;                    // the interleaved runner ran (both gates green)
    std::string runner_failure;            // crash / timeout / fatal of the A/B runner, if any
    double timing_wall_s = 0;              // the A/B runner's wall time, start to exit
    std::uint64_t seed = 0;                // the gate's drawn seed; the A/B inputs derive from it
    std::uint64_t evict_bytes = 0;
    platform::host_load_report host_load;  // other work on the machine while it timed
    std::vector<measure::sample_warning> warnings;  // of the whole timing ("busy_machine")
    // The device slot it ran on when evaluations were spread over devices (`--devices`, `--slurm`):
    // a GPU's UUID or index as CUDA_VISIBLE_DEVICES had it, and the host under Slurm; "" = unbound.
    std::string device;
    std::string device_host;
};

// A pair's result before anything ran: the op, both labels and the A/B settings.
[[nodiscard]] inline ab_evaluation new_ab_evaluation(const ab_context& ctx) {
    ab_evaluation r;
    r.op = ctx.spec.name;
    r.base_label = ctx.base.string();
    r.candidate_label = ctx.candidate.string();
    r.config = ctx.ab;
    return r;
}

}  // namespace kloop::eval
