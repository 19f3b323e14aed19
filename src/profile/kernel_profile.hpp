// kloop profile: the facts kloop uses about one profiled kernel launch.
//
// Responsibility: map ncu metric names (ncu 2025.3.1, docs/profiling.md "Fields") to named,
// unit-carrying fields. Every field is optional: a targeted capture (a few sections) lacks some,
// and a field is never invented — the one exception is `dram_bytes` when ncu gave only a rate,
// which is derived (rate × duration) and flagged as such.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::profile {

struct ncu_row;
struct ncu_raw_table;

// One warp-stall reason from smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio:
// warps stalled for this reason per issued instruction (ncu unit "inst"), and its share of the
// sum over every reason found (0..1). "selected" (the issuing cycle itself) counts in the total,
// as in ncu's own CPIStall rule ("93.3 % of the total average of 48.0 cycles").
struct stall_reason {
    std::string reason;
    double per_issue = 0;
    double share = 0;
};

// Blocks per SM each resource would allow (launch__occupancy_limit_*, ncu unit "block"). The
// smallest is the limiter of theoretical occupancy.
struct occupancy_limits {
    std::optional<double> registers;
    std::optional<double> shared_mem;
    std::optional<double> warps;
    std::optional<double> blocks;
    std::optional<double> barriers;

    // The name ("registers", "shared_mem", "warps", "blocks", "barriers") of the smallest limit;
    // ties go to the first in that order. Empty when none is known.
    [[nodiscard]] std::string get_limiter() const;
};

struct kernel_profile {
    std::string id;           // ncu's "ID" column
    std::string name;         // "Kernel Name" as in the CSV (function or demangled, per --kernel-name-base)
    std::string grid_size;    // "(128, 1, 1)" as written
    std::string block_size;
    std::string device_name;  // device__attribute_display_name, e.g. "NVIDIA H200"
    std::string cc;           // "9.0"
    std::optional<double> grid_blocks;    // launch__grid_size, else the product of "Grid Size"
    std::optional<double> block_threads;  // launch__block_size, else the product of "Block Size"

    std::optional<double> duration_ns;            // gpu__time_duration.sum
    std::optional<double> sm_throughput_pct;      // sm__throughput.avg.pct_of_peak_sustained_elapsed
    std::optional<double> memory_throughput_pct;  // gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
    std::optional<double> dram_throughput_pct;    // gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed

    std::optional<double> dram_bytes_read;        // dram__bytes_read.sum
    std::optional<double> dram_bytes_write;       // dram__bytes_write.sum
    std::optional<double> dram_bytes;             // read + write; else dram__bytes.sum; else derived
    bool dram_bytes_derived = false;              // dram_bytes = dram__bytes.sum.per_second × duration
    std::optional<double> dram_bytes_per_second;  // dram__bytes.sum.per_second

    std::optional<double> achieved_occupancy_pct;     // sm__warps_active.avg.pct_of_peak_sustained_active
    std::optional<double> theoretical_occupancy_pct;  // sm__maximum_warps_per_active_cycle_pct
    occupancy_limits occupancy_limit_blocks;
    std::optional<double> registers_per_thread;       // launch__registers_per_thread
    std::optional<double> shared_mem_per_block_bytes;          // launch__shared_mem_per_block (driver part included)
    std::optional<double> shared_mem_per_block_static_bytes;   // launch__shared_mem_per_block_static
    std::optional<double> shared_mem_per_block_dynamic_bytes;  // launch__shared_mem_per_block_dynamic
    std::optional<double> local_spilling_requests;    // derived__local_spilling_requests
    std::optional<double> spilling_instructions;      // sass__inst_executed_register_spilling
    std::optional<double> waves_per_sm;               // launch__waves_per_multiprocessor
    std::optional<double> sm_count;                   // launch__sm_count, else device__attribute_multiprocessor_count

    std::optional<double> l1_hit_rate_pct;  // l1tex__t_sector_hit_rate.pct
    std::optional<double> l2_hit_rate_pct;  // lts__t_sector_hit_rate.pct
    std::vector<stall_reason> stalls;       // every reason found, largest per_issue first (ties: by name)
    std::optional<double> tensor_pipe_pct;  // sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
    std::optional<double> sm_clock_hz;      // sm__cycles_elapsed.avg.per_second, else gpc__cycles_elapsed.avg.per_second

    std::size_t metric_columns = 0;      // metric columns in the capture
    std::size_t metrics_with_value = 0;  // of those, the ones with a number in this row

    // Up to n stall reasons, largest first, "selected" left out (it is not a stall).
    [[nodiscard]] std::vector<stall_reason> top_stalls(std::size_t n = 3) const;
};

// The metric-name prefix and suffix of the warp-stall ratios.
inline constexpr std::string_view stall_metric_prefix = "smsp__average_warps_issue_stalled_";
inline constexpr std::string_view stall_metric_suffix = "_per_issue_active.ratio";

// "(128, 2, 1)" → 256; nullopt when it does not parse.
[[nodiscard]] std::optional<double> dims_product(std::string_view dims);

[[nodiscard]] kernel_profile profile_from_row(const ncu_row& row);
[[nodiscard]] std::vector<kernel_profile> profiles_from_table(const ncu_raw_table& table);

// Stable keys (docs/profiling.md "profile_summary.json"); absent values are null.
[[nodiscard]] nlohmann::json to_json(const kernel_profile& k);

}  // namespace kloop::profile
