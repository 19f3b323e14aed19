// Puts its work on a side stream it created (default flags, not joined to kl_args::stream), plus
// a ~200 µs spin there. A timer that watched only the given stream would see almost nothing; kloop
// ends its interval on the legacy default stream, which waits for every blocking stream, so the
// whole 200 µs must show in the samples (tests/gpu: SideStreamWorkIsCounted). Its output is correct.
#include <cuda_runtime.h>

#include "kloop/kernel.h"

namespace {
__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void copy_then_spin(const float* x, float* y, long long n, unsigned long long spin_ns) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) y[i] = x[i];
    if (i == 0) {
        const unsigned long long t0 = now_ns();
        while (now_ns() - t0 < spin_ns) {
        }
    }
}

cudaStream_t side() {
    static cudaStream_t s = [] {
        cudaStream_t t = nullptr;
        cudaStreamCreate(&t);  // default flags: a blocking stream
        return t;
    }();
    return s;
}
}  // namespace

extern "C" int copy_fwd(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    const long long n = x->shape[0];
    copy_then_spin<<<static_cast<unsigned>((n + 255) / 256), 256, 0, side()>>>(
        static_cast<const float*>(x->data), static_cast<float*>(y->data), n, 200000ULL);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
