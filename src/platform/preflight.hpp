// kloop platform: preflight — is this machine fit to gate, time and profile kernels?
//
// Responsibility: collect, without creating a CUDA context, the facts a run's trustworthiness
// depends on, and render them as preflight_check.json / .md:
//   - GPUs: name, UUID, compute capability, SMs, L2, memory, driver, CUDA driver API version,
//     current and max SM / memory clocks, clock-event (throttle) reasons, temperature, power,
//     utilisation, other compute processes, and idle-clock evidence (a few samples of clock,
//     reasons and utilisation over ~0.4 s);
//     sources: NVML (dlopen libnvidia-ml.so.1) for names, clocks and reasons; the driver API
//     (dlopen libcuda.so.1: cuInit + cuDeviceGetAttribute, which create no context) for SMs and
//     L2; `nvidia-smi --query-gpu=… --format=csv` when NVML cannot be loaded;
//   - tools: nvcc, ncu, compute-sanitizer, nvidia-smi, python3 (paths and versions), torch and
//     triton versions when importable, the CUPTI library the kernel census would load;
//   - verdicts: profiling available (ncu present, a GPU, counters not admin-only for us),
//     warnings (other processes on the GPU, thermal/power throttling, no CUDA support built in).
// Nothing here throws for a missing GPU, driver or tool: absence is a fact in the report. All
// subprocesses go through command_runner_base (tests fake it); NVML/driver loading can be
// switched off (tests on a GPU machine that want the no-GPU path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kloop::platform {

class command_runner_base;

inline constexpr int preflight_schema_version = 1;

struct tool_info {
    std::string name;       // "nvcc"
    bool found = false;
    std::string path;       // resolved
    std::string version;    // "13.0.88" (parsed), or the first line of --version
    std::string error;      // why not found / why the version could not be read
};

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

struct preflight_options {
    bool cuda_support_built_in = false;  // from backend::cuda::cuda_support_built_in(), by the caller
    bool query_nvml = true;              // dlopen libnvidia-ml.so.1
    bool query_driver = true;            // dlopen libcuda.so.1
    bool query_nvidia_smi = true;        // fallback, and compute processes when NVML lacks them
    bool query_python = true;            // python3 -c 'import torch' can take seconds
    int idle_samples = 5;
    double idle_interval_s = 0.1;
    double tool_timeout_s = 60;
};

struct preflight_report {
    int schema_version = preflight_schema_version;
    std::string created_utc;
    std::vector<std::string> command_line;
    std::string kloop_version, kloop_commit;
    bool kloop_dirty = false;
    std::string host_cpu;
    unsigned logical_cpus = 0;
    bool cuda_support_built_in = false;
    std::string driver_version;          // "580.159.04"
    std::string cuda_driver_api;         // "13.0" (what the driver supports)
    bool gpu_present = false;
    std::string gpu_absent_reason;       // "no NVIDIA driver (libnvidia-ml.so.1 …)", ...
    std::vector<gpu_info> gpus;
    std::vector<tool_info> tools;        // nvcc, ncu, compute-sanitizer, nvidia-smi, python3
    std::string torch_version, torch_cuda, triton_version;  // empty: not importable
    std::string cupti_library;           // the path the kernel census would load, "" if none
    bool profiling_available = false;
    std::string profiling_reason;        // why not, or "ncu <version> at <path>"
    // What the kernel offers to confine candidates (platform/confinement.hpp, docs/security.md).
    bool seccomp_available = false;
    int landlock_abi = 0;
    std::vector<std::string> warnings;
};

[[nodiscard]] preflight_report run_preflight(command_runner_base& commands, const preflight_options& options = {});

[[nodiscard]] nlohmann::json to_json(const preflight_report& r);
[[nodiscard]] std::string to_markdown(const preflight_report& r);

// A tool on PATH, else in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin (and, for ncu,
// /opt/nvidia/nsight-compute/*); "" when not found.
[[nodiscard]] std::string find_tool(const std::string& name);

// Pure parsers (tested on recorded outputs).
// `nvidia-smi --query-gpu=<preflight_smi_fields> --format=csv,noheader,nounits`, one GPU per line.
[[nodiscard]] std::vector<gpu_info> parse_nvidia_smi_csv(std::string_view csv);
[[nodiscard]] const char* preflight_smi_fields();
// "Cuda compilation tools, release 13.0, V13.0.88" → "13.0.88"; ncu "Version 2025.3.1.0 (build …)"
// → "2025.3.1.0"; otherwise the first non-empty line.
[[nodiscard]] std::string parse_tool_version(std::string_view output);
// "gpu_idle|sw_power_cap" for a mask (NVML clocks-event reason bits), "none" for 0.
[[nodiscard]] std::string describe_event_reasons(std::uint64_t mask);

}  // namespace kloop::platform
