// kloop backend/cuda: the GPU probe behind `kloop preflight` — run as `kloop-runner-cuda
// --probe-gpus`, so NVML and the CUDA driver are loaded by a child, never by kloop itself.
//
// Responsibility: gather platform::gpu_probe_result without creating a CUDA context:
//   - NVML (nvml_loader): names, UUIDs, compute capability, memory, current and max SM / memory
//     clocks, clock event reasons, temperature, power and its limit, utilisation, other compute
//     processes, the driver's versions; then `idle_samples` rounds of clock, reasons and
//     utilisation `idle_interval_s` apart (the idle-clock evidence);
//   - the driver API (dlopen libcuda.so.1: cuInit + cuDeviceGetAttribute, no context) for what
//     NVML lacks: SM count and L2 size; a GPU only the driver sees is reported from it alone.
// Facts are matched by UUID, else by position. A missing library or driver is an error string in
// the result, never an exception.
#pragma once

#include "platform/gpu_facts.hpp"

namespace kloop::backend::cuda {

struct gpu_probe_options {
    int idle_samples = 5;
    double idle_interval_s = 0.1;
};

[[nodiscard]] platform::gpu_probe_result probe_gpus(const gpu_probe_options& options);

// `kloop-runner-cuda --probe-gpus [--idle-samples N] [--idle-interval S]`: prints the result's
// JSON on stdout and returns 0; 2 for a malformed option (named on stderr).
int probe_gpus_main(int argc, char** argv);

}  // namespace kloop::backend::cuda
