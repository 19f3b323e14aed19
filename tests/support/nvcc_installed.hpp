// tests/support: whether the tests that run the real CUDA compiler can run here.
//
// backend::cuda::default_nvcc() names a path when it found nvcc outside PATH ($KLOOP_NVCC,
// $CUDA_HOME, /usr/local/cuda), and a bare "nvcc" when it is on PATH or nowhere: the bare name is
// checked against PATH.
#pragma once

#include <cstdlib>
#include <string>

#include "backend/cuda/nvcc_builder.hpp"

namespace kloop::testing {

inline bool nvcc_installed() {
    const std::string nvcc = backend::cuda::default_nvcc();
    return nvcc.find('/') != std::string::npos || std::system("command -v nvcc >/dev/null 2>&1") == 0;
}

}  // namespace kloop::testing
