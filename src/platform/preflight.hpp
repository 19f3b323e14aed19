// kloop platform: preflight — is this machine fit to gate, time and profile kernels?
//
// Responsibility: collect the facts a run's trustworthiness depends on (report/preflight_report
// renders them as preflight_check.json / .md), loading no GPU library into kloop's process:
//   - GPUs: name, UUID, compute capability, SMs, L2, memory, driver, CUDA driver API version,
//     current and max SM / memory clocks, clock-event (throttle) reasons, temperature, power,
//     utilisation, other compute processes, and idle-clock evidence (a few samples of clock,
//     reasons and utilisation over ~0.4 s);
//     source: the GPU probe, a child (`kloop-runner-cuda --probe-gpus`: NVML and the driver API,
//     backend/cuda/gpu_probe.hpp) whose JSON this reads back (platform/gpu_facts.hpp);
//     `nvidia-smi --query-gpu=… --format=csv` when the probe found no GPU or there is none;
//   - tools: nvcc, ncu, compute-sanitizer, nvidia-smi, python3 (paths and versions), torch and
//     triton versions when importable, the CUPTI library the kernel census would load;
//   - verdicts: profiling available (ncu present, a GPU, counters not admin-only for us),
//     warnings (other processes on the GPU, thermal/power throttling, no CUDA support built in).
// Nothing here throws for a missing GPU, driver or tool: absence is a fact in the report. All
// subprocesses, the probe included, go through command_runner_base (tests fake it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/gpu_facts.hpp"

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

struct preflight_options {
    bool cuda_support_built_in = false;  // from the cuda backend (backend::op_backend::built_in), by the caller
    // The GPU probe's command (`kloop-runner-cuda --probe-gpus`, backend/cuda/gpu_probe.hpp),
    // run as a child: empty when there is none (a kloop without CUDA; tests).
    std::vector<std::string> gpu_probe_argv;
    bool query_nvidia_smi = true;        // fallback, and compute processes when NVML lacks them
    bool query_python = true;            // python3 -c 'import torch' can take seconds
    int idle_samples = 5;                // passed to the probe
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

}  // namespace kloop::platform
