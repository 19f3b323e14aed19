// kloop profile: the roofline — device peaks, the floor time of an op, and how close a
// measurement comes to it.
//
// Responsibility: the arithmetic of docs/profiling.md "Roofline", nothing else (no I/O; the lead's
// calibration step writes and reads the cache through to_json / device_peaks_from_json).
//   floor       t_floor = max(bytes / bandwidth, flops / rate); rate = tensor-core rate when the op
//               uses tensor cores, else FP32. `bytes` are the fewest DRAM bytes the op must move
//               (the spec's `bytes`: each input read once, each output written once).
//   bound       whichever term sets t_floor (memory on a tie)
//   intensity   flops / bytes (FLOP/B); ridge = rate / bandwidth. intensity < ridge → memory.
//   % of floor  t_floor / t_measured × 100 (100 = at the roofline)
//   re-read     measured DRAM bytes / spec bytes (1 = each byte moved once)
//   suspect     t_measured < t_floor × (1 − margin): faster than the hardware allows, so the spec's
//               bytes/flops or the measurement are wrong (work skipped, data cached across calls).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kloop::profile {

// Where a device's peaks come from. `calibrated`: measured on this machine (copy bandwidth, GEMM
// rate) — what a kernel can really reach. `datasheet`: the vendor's figures — a little above that.
enum class peak_source { calibrated, datasheet };
[[nodiscard]] std::string to_string(peak_source s);
[[nodiscard]] peak_source peak_source_from_string(std::string_view s);  // throws usage_error

struct device_peaks {
    std::string device_name;
    double dram_bytes_per_s = 0;    // DRAM (HBM) bandwidth, read + write
    double fp32_flops_per_s = 0;    // non-tensor FP32 (FFMA = 2 FLOP)
    double tensor_flops_per_s = 0;  // dense BF16/FP16 tensor-core math
    peak_source source = peak_source::datasheet;
};

// Datasheet peaks for a device name as ncu or CUDA reports it ("NVIDIA H200"), matched by
// case-insensitive substring, most specific entry first (docs/profiling.md lists the table).
// nullopt for a device the table does not know.
[[nodiscard]] std::optional<device_peaks> datasheet_peaks(std::string_view device_name);

// {"device", "dram_bytes_per_s", "fp32_flops_per_s", "tensor_flops_per_s", "source"}.
[[nodiscard]] nlohmann::json to_json(const device_peaks& p);
// Throws usage_error naming the key that is missing, not a number, negative or not finite.
[[nodiscard]] device_peaks device_peaks_from_json(const nlohmann::json& j);

enum class roofline_bound { memory, compute };
[[nodiscard]] std::string to_string(roofline_bound b);                // "memory", "compute"
[[nodiscard]] roofline_bound roofline_bound_from_string(std::string_view s);  // throws usage_error

struct roofline_point {
    double flops = 0;
    double bytes = 0;
    bool uses_tensor_cores = false;
    double bandwidth_bytes_per_s = 0;  // the peaks used
    double rate_flops_per_s = 0;
    double memory_time_ns = 0;  // bytes / bandwidth
    double compute_time_ns = 0; // flops / rate
    double floor_ns = 0;        // max of the two
    roofline_bound bound = roofline_bound::memory;
    double arithmetic_intensity = 0;  // FLOP/B; +inf when bytes == 0
    double ridge_point = 0;           // FLOP/B where the two roofs meet
};

// Throws usage_error for negative or non-finite flops/bytes, or a needed peak that is not > 0.
[[nodiscard]] roofline_point roofline_floor(double flops, double bytes, const device_peaks& peaks,
                                            bool uses_tensor_cores);

// floor / measured × 100. Throws usage_error when measured_ns is not > 0.
[[nodiscard]] double pct_of_floor(const roofline_point& point, double measured_ns);

// measured DRAM bytes / spec bytes. Throws usage_error when spec_bytes is not > 0.
[[nodiscard]] double reread_factor(double measured_dram_bytes, double spec_bytes);

// Why 10 %: a calibrated floor uses the copy bandwidth a kernel really reaches, and the datasheet
// is a few percent above that (H200: 4.8 TB/s datasheet, ~4.4 TB/s streamed), so an honest kernel
// never lands below the floor by more than clock and measurement noise (a few percent). 10 % below
// means the op did less work than the spec says (or read a cache the floor assumes cold).
inline constexpr double default_suspect_margin = 0.10;

// measured < floor × (1 − margin). Throws usage_error when margin is outside [0, 1).
[[nodiscard]] bool suspect_below_floor(const roofline_point& point, double measured_ns,
                                       double margin = default_suspect_margin);

}  // namespace kloop::profile
