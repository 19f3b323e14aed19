// kloop profile: what limits one kernel, from its ncu facts — the bound, the evidence, and
// where to look next.
//
// Responsibility: one documented decision procedure (docs/profiling.md "Diagnosis"), in order:
//   1. launch-bound       duration < 10 µs, or waves < 0.2 and duration < 50 µs
//   2. compute-bound      SM ≥ 60 % and (SM > memory, or tensor pipe ≥ 60 %)
//   3. memory-bound       memory ≥ 60 % and memory ≥ SM
//                         level: DRAM when DRAM ≥ 0.8 × memory, else L1/L2 (the caches or the
//                         load/store path are busy, DRAM is not: uncoalesced or repeated access)
//   4. occupancy-limited  (neither ≥ 60 %) achieved < 0.5 × theoretical occupancy, or
//                         theoretical < 25 %, or waves < 1
//   5. latency-bound      neither ≥ 60 %, occupancy fine: warps wait (top stall reason says on what)
//   unknown               the SpeedOfLight percentages are missing (and it is not launch-bound)
// Every threshold is a named constant below; each direction cites a docs/knowledge-base.md anchor
// and the ncu signal that calls for it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::profile {

struct kernel_profile;

enum class bound { memory, compute, latency, occupancy, launch, unknown };
// "memory-bound", "compute-bound", "latency-bound", "occupancy-limited", "launch-bound", "unknown"
[[nodiscard]] std::string to_string(bound b);
[[nodiscard]] bound bound_from_string(std::string_view s);  // throws usage_error

// For memory-bound kernels: which level of the hierarchy is busy.
enum class memory_level { dram, cache };
[[nodiscard]] std::string to_string(memory_level l);  // "dram", "l1-l2"
[[nodiscard]] memory_level memory_level_from_string(std::string_view s);  // throws usage_error

// Thresholds of the decision procedure; docs/profiling.md "Diagnosis" gives the reasons.
namespace thresholds {
// A kernel this short is dominated by launch cost (~3.5 µs per separate launch on an H200,
// ~0.5 µs in a graph) and its SOL percentages are ramp-up and tail, not steady state.
inline constexpr double launch_max_duration_ns = 10'000;
// A grid under a fifth of one wave that is also short: the launch, not the work, is the cost.
inline constexpr double launch_small_grid_waves = 0.2;
inline constexpr double launch_small_grid_max_duration_ns = 50'000;
// ncu's own SOLBottleneck rule calls a unit "highly utilised" at 60 % of peak; agree with it.
inline constexpr double high_throughput_pct = 60;
// DRAM is the busy level when its throughput is within 20 % of the memory SOL figure (which is
// the max over L1, L2 and DRAM); below that an inner level is the one at the limit.
inline constexpr double dram_fraction_of_memory = 0.8;
// Tensor pipe at this share of peak: the MMA units are the roof even if the memory SOL is as high.
inline constexpr double tensor_saturated_pct = 60;
// Below this the tensor pipe is practically idle (a compute-bound kernel not using tensor cores).
inline constexpr double tensor_in_use_pct = 10;
// Achieved occupancy under half of theoretical: warps are missing (small grid, tail, imbalance).
inline constexpr double achieved_to_theoretical_min = 0.5;
// Theoretical occupancy under a quarter (16 of 64 warps per SM on sm_90): too few warps to hide latency.
inline constexpr double theoretical_occupancy_min_pct = 25;
// Fewer blocks than one full wave leaves SMs (or warp slots) idle for the whole kernel.
inline constexpr double min_waves = 1.0;
// L1 hit rate this high in a memory-bound kernel: the same lines are fetched again and again.
inline constexpr double high_l1_hit_pct = 80;
// L2 hit rate this low with DRAM busy: little reuse is caught on chip.
inline constexpr double low_l2_hit_pct = 50;
// DRAM bytes more than this multiple of the spec's bytes: data is read more than once.
inline constexpr double reread_factor_max = 1.25;
// DRAM under this share of peak in a DRAM-bound kernel: not yet at the roof (wider / more loads help).
inline constexpr double dram_near_peak_pct = 80;
}  // namespace thresholds

// One signal the decision looked at.
struct evidence_item {
    std::string signal;     // "memory throughput"
    std::string metric;     // the ncu metric ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    double value = 0;
    std::string unit;       // "%", "ns", "waves", "share", "x"
    std::string threshold;  // the rule as text: ">= 60 % and >= SM (memory-bound)"
    bool met = false;       // the value meets the threshold
};

// One next step: a technique, its knowledge-base anchor, and the signal that calls for it.
struct direction {
    std::string technique;
    std::string kb_anchor;  // "mem-coalescing" → docs/knowledge-base.md#mem-coalescing
    std::string signal;     // "memory 67.3 % of peak but DRAM 6.6 %"
};

struct diagnosis {
    bound kind = bound::unknown;
    std::optional<memory_level> level;  // set for memory-bound only
    std::string headline;               // one line with numbers
    std::vector<evidence_item> evidence;
    std::vector<direction> directions;  // 2–4 (none when unknown)
    std::vector<std::string> notes;     // missing metrics, caveats
};

// Optional facts from outside the capture.
struct diagnosis_context {
    // measured DRAM bytes / spec bytes of the call (roofline.hpp); only meaningful when the
    // capture holds the call's one kernel.
    std::optional<double> reread_factor;
};

[[nodiscard]] diagnosis diagnose(const kernel_profile& k, const diagnosis_context& ctx = {});

inline constexpr std::string_view knowledge_base_path = "docs/knowledge-base.md";
// Every anchor diagnose() may cite (each must exist in docs/knowledge-base.md; a test checks).
[[nodiscard]] const std::vector<std::string>& knowledge_base_anchors();

// {"bound", "memory_level", "headline", "evidence": [...], "directions": [...], "notes": [...]}
[[nodiscard]] nlohmann::json to_json(const diagnosis& d);

// Human numbers shared with the summary: "4.21 TB/s", "318 GB/s"; "2.64 ms", "4.2 µs", "850 ns".
[[nodiscard]] std::string format_bytes_per_s(double bytes_per_s);
[[nodiscard]] std::string format_duration_ns(double ns);
[[nodiscard]] std::string format_bytes(double bytes);  // "537 MB", "1.07 GB"

}  // namespace kloop::profile
