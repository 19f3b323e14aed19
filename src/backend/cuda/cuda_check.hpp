// kloop backend/cuda: the one macro every CUDA runtime call of kloop's own goes through.
//
// Responsibility: turn a failed CUDA call into a message carrying the error name, the error
// string and the call text ("cudaMalloc(&p, bytes): cudaErrorMemoryAllocation: out of memory"),
// as nvbench's NVBENCH_CUDA_CALL does. KLOOP_CUDA_CALL throws cuda_error (the runner reports it
// as a fatal event); KLOOP_CUDA_CALL_NOEXCEPT prints to stderr and goes on (destructors,
// releases after a sticky error). Errors of the candidate's own work are not thrown: the
// executor reports them as call_outcome::device_error.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace kloop::backend::cuda {

class cuda_error : public std::runtime_error {
public:
    cuda_error(cudaError_t code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    [[nodiscard]] cudaError_t get_code() const noexcept { return m_code; }

private:
    cudaError_t m_code;
};

// "cudaErrorIllegalAddress: an illegal memory access was encountered"
[[nodiscard]] inline std::string describe_cuda_error(cudaError_t e) {
    return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call_text);
void report_cuda_error(cudaError_t e, const char* call_text) noexcept;

}  // namespace kloop::backend::cuda

#define KLOOP_CUDA_CALL(call)                                                              \
    do {                                                                                   \
        const cudaError_t kloop_cuda_status_ = (call);                                     \
        if (kloop_cuda_status_ != cudaSuccess)                                             \
            ::kloop::backend::cuda::throw_cuda_error(kloop_cuda_status_, #call);           \
    } while (false)

#define KLOOP_CUDA_CALL_NOEXCEPT(call)                                                     \
    do {                                                                                   \
        const cudaError_t kloop_cuda_status_ = (call);                                     \
        if (kloop_cuda_status_ != cudaSuccess)                                             \
            ::kloop::backend::cuda::report_cuda_error(kloop_cuda_status_, #call);          \
    } while (false)
