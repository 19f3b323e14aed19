// kloop's calibration kernels (see op.toml): the candidate side. reference.cu compiles the same
// kernels under the *_ref entry names.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kloop/kernel.h"

#ifndef KLOOP_CALIBRATE_ENTRY
#define KLOOP_CALIBRATE_ENTRY(name) name
#endif

namespace {

// float4 body plus a scalar tail; grid-stride so any N works.
__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long n4 = n / 4;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const auto* x4 = reinterpret_cast<const float4*>(x);
    auto* y4 = reinterpret_cast<float4*>(y);
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n4; i += stride) y4[i] = x4[i];
    for (long long i = n4 * 4 + blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) y[i] = x[i];
}

// 8 independent FMA chains per thread keep the FP32 pipes busy; the constants keep values finite.
__global__ void fma_kernel(const float* __restrict__ x, float* __restrict__ y, long long t, int iters) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= t) return;
    const float v = x[i];
    float a[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = v + 0.125f * static_cast<float>(k);
    for (int s = 0; s < iters; ++s) {
#pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], 0.9999f, 0.0001f);
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += a[k];
    y[i] = sum;
}

// Each warp: 4 independent accumulators, mma.sync m16n8k16 (bf16 in, fp32 accumulate) per step.
// Operands are small integers (exact in bf16) and sums stay below 2^24: the result is exact in
// any order. Each thread writes the sum of its accumulators.
__global__ void mma_kernel(const __nv_bfloat16* __restrict__ x, float* __restrict__ y, long long t, int iters) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long warp_base = i - (threadIdx.x & 31);
    if (warp_base >= t) return;
    const __nv_bfloat16 v = x[i < t ? i : t - 1];
    const __nv_bfloat162 p = __halves2bfloat162(v, v);
    const unsigned a0 = *reinterpret_cast<const unsigned*>(&p);
    float c[4][4] = {};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    for (int s = 0; s < iters; ++s) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};\n"
                : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                : "r"(a0), "r"(a0), "r"(a0), "r"(a0), "r"(a0), "r"(a0));
        }
    }
#endif
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) sum += c[k][0] + c[k][1] + c[k][2] + c[k][3];
    if (i < t) y[i] = sum;
}

cudaStream_t stream_of(const kl_args* a) { return static_cast<cudaStream_t>(a->stream); }

}  // namespace

extern "C" int KLOOP_CALIBRATE_ENTRY(calibrate_copy)(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    if (x == nullptr || y == nullptr) return KL_ERR_BAD_ARGS;
    const long long n = x->shape[0];
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    long long blocks = (n / 4 + 255) / 256;
    if (blocks > sms * 8LL) blocks = sms * 8LL;
    if (blocks < 1) blocks = 1;
    copy_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream_of(a)>>>(static_cast<const float*>(x->data),
                                                                          static_cast<float*>(y->data), n);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

extern "C" int KLOOP_CALIBRATE_ENTRY(calibrate_fma)(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    if (x == nullptr || y == nullptr) return KL_ERR_BAD_ARGS;
    const long long t = x->shape[0];
    const int iters = static_cast<int>(kl_dim_value(a, "ITERS", 0));
    fma_kernel<<<static_cast<unsigned>((t + 255) / 256), 256, 0, stream_of(a)>>>(static_cast<const float*>(x->data),
                                                                                  static_cast<float*>(y->data), t, iters);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

extern "C" int KLOOP_CALIBRATE_ENTRY(calibrate_mma)(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    if (x == nullptr || y == nullptr) return KL_ERR_BAD_ARGS;
    const long long t = x->shape[0];
    const int iters = static_cast<int>(kl_dim_value(a, "MITERS", 0));
    mma_kernel<<<static_cast<unsigned>((t + 255) / 256), 256, 0, stream_of(a)>>>(
        static_cast<const __nv_bfloat16*>(x->data), static_cast<float*>(y->data), t, iters);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
