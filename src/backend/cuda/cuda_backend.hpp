// kloop backend/cuda: the CUDA backend — .cu sources compiled by nvcc for the device's compute
// capability ($KLOOP_CUDA_ARCH, default 90: the orchestrator runs no CUDA to ask), run by
// kloop-runner-cuda (the executor, the GPU timing protocol, the CUPTI census), profiled by ncu.
// A CPU reference (.cpp) is built by c++ and runs in the same runner.
#pragma once

#include <string>

#include "backend/backend.hpp"

namespace kloop::backend::cuda {

[[nodiscard]] const op_backend& cuda_backend();

// The compute capability nvcc targets: $KLOOP_CUDA_ARCH ("90", "9.0", "sm_90"), else 90.
// Throws kloop::usage_error naming the variable for anything else.
[[nodiscard]] int target_compute_capability();

}  // namespace kloop::backend::cuda
