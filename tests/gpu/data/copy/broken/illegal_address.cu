// Broken on purpose: writes far outside its output (an illegal address, a sticky CUDA error).
// kloop must reject it with the CUDA error's name, and only the runner process may die.
#include <cuda_runtime.h>

#include "kloop/kernel.h"

namespace {
__global__ void bad_copy(const float* x, float* y, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) y[i] = x[i];
    if (i == 0) y[(1LL << 40) / sizeof(float)] = 1.0f;  // 1 TiB past the buffer: unmapped
}
}  // namespace

extern "C" int copy_fwd(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    const long long n = x->shape[0];
    bad_copy<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
        static_cast<const float*>(x->data), static_cast<float*>(y->data), n);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
