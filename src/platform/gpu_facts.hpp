// kloop platform: the facts about a machine's GPUs that preflight reports, and the wire format of
// the probe that gathers them outside kloop's process.
//
// Responsibility: plain data — one GPU's identity, clocks, clock event (throttle) reasons,
// temperature, power, utilisation, other compute processes and idle-clock samples — with its
// JSON form. The orchestrator never loads a GPU library (DESIGN: no CUDA in-process): the CUDA
// runner gathers these facts (`kloop-runner-cuda --probe-gpus`, backend/cuda/gpu_probe: NVML and
// the driver API, whose cuInit then happens in that child) and prints gpu_probe_result as one
// JSON object; preflight (platform/preflight) reads it back with gpu_probe_from_json, which
// refuses anything else by name. Also the names of NVML's clock event reason bits, shared by the
// probe, the CUDA executor's per-sample clock record and nvidia-smi's CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::platform {

// Reason bits of nvmlDeviceGetCurrentClocksEventReasons (nvml.h, CUDA 13.0).
namespace clock_event_reason {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks_setting = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal_slowdown = 0x20;
inline constexpr std::uint64_t hw_thermal_slowdown = 0x40;
inline constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr std::uint64_t display_clock_setting = 0x100;
}  // namespace clock_event_reason

// "sw_power_cap|hw_thermal_slowdown" for a mask; "none" for 0; unknown bits as "0x…".
[[nodiscard]] std::string describe_clock_event_reasons(std::uint64_t mask);

struct clock_sample {
    double t_s = 0;                      // since the first sample
    unsigned sm_clock_mhz = 0;
    std::optional<std::uint64_t> event_reasons;
    std::optional<unsigned> utilization_pct;
};

struct gpu_info {
    int index = 0;
    std::string source;                  // "nvml+driver", "nvml", "driver", "nvidia-smi"
    std::string name;
    std::string uuid;                    // "GPU-…"
    int cc_major = -1, cc_minor = -1;
    int sm_count = -1;
    std::uint64_t l2_bytes = 0;
    std::uint64_t memory_bytes = 0;
    unsigned sm_clock_mhz = 0, max_sm_clock_mhz = 0;
    unsigned mem_clock_mhz = 0, max_mem_clock_mhz = 0;
    std::optional<std::uint64_t> event_reasons;
    std::string event_reasons_text;      // "gpu_idle", "sw_power_cap|hw_slowdown", "none"
    std::optional<unsigned> temperature_c;
    std::optional<double> power_w, power_limit_w;
    std::optional<unsigned> utilization_pct;
    std::optional<int> compute_processes;
    std::vector<clock_sample> idle_samples;
    std::string idle_evidence;           // one sentence
};

[[nodiscard]] nlohmann::json to_json(const gpu_info& g);
// Throws std::invalid_argument naming the field for a malformed object.
[[nodiscard]] gpu_info gpu_info_from_json(const nlohmann::json& j);

// What the probe found: the GPUs, the driver's versions, and why a source gave nothing.
struct gpu_probe_result {
    std::string driver_version;          // "580.159.04" (NVML)
    std::string cuda_driver_api;         // "13.0" (what the driver supports)
    std::vector<gpu_info> gpus;
    std::string nvml_error;              // "" when NVML answered
    std::string driver_error;            // "" when the driver API answered
};

inline constexpr const char* gpu_probe_kind = "kloop.gpu_probe";
inline constexpr int gpu_probe_schema_version = 1;

[[nodiscard]] nlohmann::json to_json(const gpu_probe_result& r);
// Throws std::invalid_argument naming what is wrong (not JSON, another kind or schema, a bad GPU).
[[nodiscard]] gpu_probe_result gpu_probe_from_json(const std::string& text);

}  // namespace kloop::platform
