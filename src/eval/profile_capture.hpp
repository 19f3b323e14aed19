// kloop eval: one Nsight Compute capture of a candidate's call (the loop's profile step).
//
// Responsibility: build the candidate (cached), write a runner job in the profile phase for one
// mode × shape — warm-up, then exactly one call inside cudaProfilerStart/Stop, no reference, no
// checks, no flush in the range — and run the runner under
//   ncu --clock-control none --target-processes all --profile-from-start off
//       --kernel-name-base mangled [-k regex:^(census names)$] <set> -f -o <dir>/<name> kloop-runner-cuda …
// then re-read the report with `ncu -i … --csv --page raw` into its own file, so the program's
// output never mixes into the CSV. ncu's failures are classified (no permission to the counters,
// no kernel matched, no ncu, anything else) into one clear line: the loop carries on with timing
// only and marks the profile missing. Profile-mode timings are never bench results.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/record/profile_result.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

// targeted: SpeedOfLight, Occupancy, LaunchStats, MemoryWorkloadAnalysis, WarpStateStats,
// SchedulerStats (+ DRAM read/write bytes); full: --set full; source: SourceCounters with
// --import-source yes (ncu 2025.3 has no "source" set; builds always carry -lineinfo).
enum class profile_set { targeted, full, source };
[[nodiscard]] std::string to_string(profile_set s);
[[nodiscard]] std::optional<profile_set> profile_set_from_string(std::string_view s);
// The ncu arguments that select a set's sections / metrics.
[[nodiscard]] std::vector<std::string> ncu_set_arguments(profile_set s);

// How an ncu run ended, read from its exit code and output (tested on recorded texts).
enum class ncu_outcome { ok, no_permission, no_kernels, failed };
struct ncu_diagnosis {
    ncu_outcome outcome = ncu_outcome::failed;
    std::string message;                     // one line: what went wrong, and what to do
    std::vector<std::string> available_kernels;  // after "No kernels were profiled"
};
[[nodiscard]] ncu_diagnosis diagnose_ncu_output(std::string_view output, int exit_code, bool report_written);

// `regex:^(a|b)$` over mangled names, regex metacharacters escaped; "" for no names.
[[nodiscard]] std::string kernel_filter_regex(const std::vector<std::string>& mangled_names);

struct profile_request {
    std::string mode;
    std::string shape;
    profile_set set = profile_set::targeted;
    std::filesystem::path out_dir;           // the report, the CSV and the log go here
    std::vector<std::string> kernel_names;   // census names (mangled); empty: no -k filter
    double timeout_s = 600;                  // ncu replays each kernel once per pass: slow
    std::string ncu;                         // "" = $KLOOP_NCU, else platform::find_tool("ncu")
};


struct evaluation_context;
// Never throws for what ncu or the candidate do; throws usage_error for an unknown mode/shape.
[[nodiscard]] profile_capture capture_profile(const evaluation_context& ctx, const profile_request& req);

}  // namespace kloop::eval
