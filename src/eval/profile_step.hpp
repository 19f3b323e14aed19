// kloop eval: the profile step of a loop iteration and of `kloop profile` — capture, parse,
// explain, judge.
//
// Responsibility: for each (mode, shape) target and each set asked for, capture with ncu
// (eval/profile_capture), parse the raw CSV into kernel facts (profile/ncu_csv, kernel_profile),
// summarise them against the roofline with this machine's peaks (eval/calibration,
// profile/profile_summary); the caller writes `profile_summary.json` and `profile_summary.md`
// (report/profile_report). Then the loop's rules (docs/profiling.md "Rules in the loop"): a candidate is
// SUSPECT when the profile cannot explain its time —
//   below_floor      its bench median is below the roofline floor by more than the margin
//                    (peaks: the larger of calibrated and datasheet);
//   bytes_collapsed  the DRAM bytes its kernels moved are under half the spec's bytes (inputs
//                    are read once at least: work was skipped or reused across calls);
//   no_kernels       the profiled call launched no kernel;
//   timer_below_profiler  its bench median is below the kernel time ncu measured for the same
//                    call (Σ gpu__time_duration, out of process) by more than a margin: 25 % for
//                    a one-kernel call, 50 % for several (ncu replays kernels one by one, cache
//                    flushed before each, so kernels that overlap on streams or hand data over in
//                    L2 add up to more than the call's own window).
// A suspect cannot be promoted until re-checked. ncu missing or without counter permission ends
// the step after one clear line: the status is "unavailable" and the loop times only.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluator.hpp"
#include "eval/profile_capture.hpp"
#include "eval/record/profile_result.hpp"
#include "profile/profile_summary.hpp"

namespace kloop::eval {

struct profile_target {
    std::string mode;
    std::string shape;                       // "" = default_profile_shape(spec, mode)
    std::optional<double> measured_ns;       // kloop's bench median of this call, if known
    std::vector<std::string> kernel_names;   // census names (mangled) for the -k filter
};

struct profile_step_request {
    std::vector<profile_target> targets;
    std::vector<profile_set> sets = {profile_set::targeted, profile_set::full};
    std::filesystem::path out_dir;
    double timeout_s = 600;
    std::string ncu;                         // "" = $KLOOP_NCU or found on PATH
};

// The bench shape of `mode` with the most spec bytes (else flops, else the last bench shape).
[[nodiscard]] std::string default_profile_shape(const spec::op_spec& spec, const std::string& mode);

[[nodiscard]] profile_step_result run_profile_step(const evaluation_context& ctx, const profile_step_request& req);

// The timer_below_profiler rule on one call: a suspect reason, or "" when the median is within the
// margin of ncu's per-call kernel time (kernels_per_call > 1 takes the wider margin).
inline constexpr double profiler_margin_one_kernel = 0.25;
inline constexpr double profiler_margin_several_kernels = 0.50;
[[nodiscard]] std::string timer_below_profiler(const std::string& key, double measured_ns, double ncu_ns_per_call,
                                               double kernels_per_call);

// The loop's judgement on parsed entries (pure; tested on recorded captures).
void judge_profiles(profile_step_result& r);

}  // namespace kloop::eval
