// rmsnorm-cuda broken/side_stream: v1 launched on a stream it creates itself
// (cudaStreamCreateWithFlags(cudaStreamNonBlocking)) instead of args->stream, returning without
// waiting for it. The timed window (start event on args->stream, end event on the legacy
// stream) then closes before the kernels have run: the "time" is the launch overhead. The
// outputs are right, because every checked call ends with a device-wide synchronisation.
//
// Rejected by: `census_time_vs_event` — the kernels CUPTI saw in a checked call of the
// r16384_h4096 shape (gate and bench) span far more than the event-timed median of that shape,
// which is work outside the timed window (fail beyond 2x). Also reported: `imported_symbols`
// warns (stream_creation: cudaStreamCreateWithFlags), and the census lists the kernels on a
// stream other than the runner's.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <kloop/kernel.h>

namespace {

using bf16 = __nv_bfloat16;
using bf162 = __nv_bfloat162;
constexpr int kThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; every thread gets the total. smem: 32 floats.
__device__ __forceinline__ float block_sum(float v, float* smem) {
    v = warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < static_cast<int>(blockDim.x / 32) ? smem[lane] : 0.f;
    v = warp_sum(v);
    __syncthreads();  // smem is reused by the next reduction
    return v;
}

__device__ __forceinline__ void unpack8(const uint4& u, float f[8]) {
    const bf162* h = reinterpret_cast<const bf162*>(&u);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float2 p = __bfloat1622float2(h[k]);
        f[2 * k] = p.x;
        f[2 * k + 1] = p.y;
    }
}

__device__ __forceinline__ uint4 pack8(const float f[8]) {
    uint4 u;
    bf162* h = reinterpret_cast<bf162*>(&u);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
    return u;
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads) fwd_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                       bf16* __restrict__ y, float* __restrict__ rstd, int d, float eps) {
    __shared__ float smem[32];
    const size_t row = blockIdx.x;
    const bf16* xr = x + row * d;
    bf16* yr = y + row * d;
    float ss = 0.f;
    if constexpr (kVec) {
        const uint4* xv = reinterpret_cast<const uint4*>(xr);
        for (int i = threadIdx.x; i < d / 8; i += blockDim.x) {
            float f[8];
            unpack8(xv[i], f);
#pragma unroll
            for (int k = 0; k < 8; ++k) ss += f[k] * f[k];
        }
    } else {
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            const float v = __bfloat162float(xr[i]);
            ss += v * v;
        }
    }
    const float r = rsqrtf(block_sum(ss, smem) / d + eps);
    if (threadIdx.x == 0) rstd[row] = r;
    if constexpr (kVec) {
        const uint4* xv = reinterpret_cast<const uint4*>(xr);
        const uint4* wv = reinterpret_cast<const uint4*>(w);
        uint4* yv = reinterpret_cast<uint4*>(yr);
        for (int i = threadIdx.x; i < d / 8; i += blockDim.x) {
            float fx[8], fw[8], fy[8];
            unpack8(xv[i], fx);
            unpack8(wv[i], fw);
#pragma unroll
            for (int k = 0; k < 8; ++k) fy[k] = fx[k] * r * fw[k];
            yv[i] = pack8(fy);
        }
    } else {
        for (int i = threadIdx.x; i < d; i += blockDim.x)
            yr[i] = __float2bfloat16_rn(__bfloat162float(xr[i]) * r * __bfloat162float(w[i]));
    }
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads) dx_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                      const float* __restrict__ rstd, const bf16* __restrict__ dy,
                                                      bf16* __restrict__ dx, int d) {
    __shared__ float smem[32];
    const size_t row = blockIdx.x;
    const size_t off = row * d;
    const float r = rstd[row];
    float c = 0.f;
    if constexpr (kVec) {
        const uint4 *xv = reinterpret_cast<const uint4*>(x + off), *dyv = reinterpret_cast<const uint4*>(dy + off),
                    *wv = reinterpret_cast<const uint4*>(w);
        for (int i = threadIdx.x; i < d / 8; i += blockDim.x) {
            float fx[8], fdy[8], fw[8];
            unpack8(xv[i], fx);
            unpack8(dyv[i], fdy);
            unpack8(wv[i], fw);
#pragma unroll
            for (int k = 0; k < 8; ++k) c += fdy[k] * fw[k] * fx[k];
        }
    } else {
        for (int i = threadIdx.x; i < d; i += blockDim.x)
            c += __bfloat162float(dy[off + i]) * __bfloat162float(w[i]) * __bfloat162float(x[off + i]);
    }
    c = block_sum(c, smem) / d;
    const float r3c = r * r * r * c;
    if constexpr (kVec) {
        const uint4 *xv = reinterpret_cast<const uint4*>(x + off), *dyv = reinterpret_cast<const uint4*>(dy + off),
                    *wv = reinterpret_cast<const uint4*>(w);
        uint4* dxv = reinterpret_cast<uint4*>(dx + off);
        for (int i = threadIdx.x; i < d / 8; i += blockDim.x) {
            float fx[8], fdy[8], fw[8], o[8];
            unpack8(xv[i], fx);
            unpack8(dyv[i], fdy);
            unpack8(wv[i], fw);
#pragma unroll
            for (int k = 0; k < 8; ++k) o[k] = r * fdy[k] * fw[k] - fx[k] * r3c;
            dxv[i] = pack8(o);
        }
    } else {
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            const float g = __bfloat162float(dy[off + i]) * __bfloat162float(w[i]);
            dx[off + i] = __float2bfloat16_rn(r * g - __bfloat162float(x[off + i]) * r3c);
        }
    }
}

// Stage 1: block (column tile, row chunk) → partial[chunk][column].
__global__ void __launch_bounds__(kThreads) dw_partial_kernel(const bf16* __restrict__ x, const float* __restrict__ rstd,
                                                              const bf16* __restrict__ dy, float* __restrict__ partial,
                                                              int n, int d, int rows_per_chunk) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    const int i0 = blockIdx.y * rows_per_chunk;
    const int i1 = min(n, i0 + rows_per_chunk);
    float s = 0.f;
    for (int i = i0; i < i1; ++i) {
        const size_t k = static_cast<size_t>(i) * d + j;
        s += __bfloat162float(dy[k]) * __bfloat162float(x[k]) * rstd[i];
    }
    partial[static_cast<size_t>(blockIdx.y) * d + j] = s;
}

// Stage 2: dw[j] = sum over chunks, in chunk order.
__global__ void dw_final_kernel(const float* __restrict__ partial, bf16* __restrict__ dw, int chunks, int d) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    float s = 0.f;
    for (int c = 0; c < chunks; ++c) s += partial[static_cast<size_t>(c) * d + j];
    dw[j] = __float2bfloat16_rn(s);
}

// The cheat: all work goes to a private non-blocking stream, which neither args->stream nor the
// legacy default stream waits for, and the call returns without synchronising it.
cudaStream_t side_stream() {
    static cudaStream_t s = [] {
        cudaStream_t created = nullptr;
        cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
        return created;
    }();
    return s;
}

float* workspace(size_t bytes) {
    static float* p = nullptr;
    static size_t capacity = 0;
    if (bytes > capacity) {
        if (p != nullptr) cudaFree(p);
        p = nullptr;
        capacity = 0;
        if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
        capacity = bytes;
    }
    return p;
}

bool is(const kl_tensor* t, kl_dtype dt, int ndim) { return t != nullptr && t->dtype == dt && t->ndim == ndim; }
bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

extern "C" int rmsnorm_fwd(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *y = kl_output(a, "y"), *rstd = kl_output(a, "rstd");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(y, KL_BF16, 2) || !is(rstd, KL_F32, 1)) return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const auto s = side_stream();  // not a->stream
    const float eps = static_cast<float>(kl_param_f64(a, "eps", 1e-6));
    const auto* xp = static_cast<const bf16*>(x->data);
    const auto* wp = static_cast<const bf16*>(w->data);
    auto* yp = static_cast<bf16*>(y->data);
    auto* rp = static_cast<float*>(rstd->data);
    if (d % 8 == 0 && aligned16(xp) && aligned16(wp) && aligned16(yp))
        fwd_kernel<true><<<n, kThreads, 0, s>>>(xp, wp, yp, rp, d, eps);
    else
        fwd_kernel<false><<<n, kThreads, 0, s>>>(xp, wp, yp, rp, d, eps);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

extern "C" int rmsnorm_bwd(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *rstd = kl_input(a, "rstd"), *dy = kl_input(a, "dy");
    const kl_tensor *dx = kl_output(a, "dx"), *dw = kl_output(a, "dw");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(rstd, KL_F32, 1) || !is(dy, KL_BF16, 2) || !is(dx, KL_BF16, 2) ||
        !is(dw, KL_BF16, 1))
        return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const auto s = side_stream();  // not a->stream
    const auto* xp = static_cast<const bf16*>(x->data);
    const auto* wp = static_cast<const bf16*>(w->data);
    const auto* dyp = static_cast<const bf16*>(dy->data);
    const auto* rp = static_cast<const float*>(rstd->data);
    auto* dxp = static_cast<bf16*>(dx->data);
    if (d % 8 == 0 && aligned16(xp) && aligned16(wp) && aligned16(dyp) && aligned16(dxp))
        dx_kernel<true><<<n, kThreads, 0, s>>>(xp, wp, rp, dyp, dxp, d);
    else
        dx_kernel<false><<<n, kThreads, 0, s>>>(xp, wp, rp, dyp, dxp, d);

    // About four waves of stage-1 blocks on a 132-SM GPU.
    const int tiles = (d + kThreads - 1) / kThreads;
    int chunks = (132 * 8 + tiles - 1) / tiles;
    chunks = chunks < 1 ? 1 : chunks > n ? n : chunks;
    const int rows_per_chunk = (n + chunks - 1) / chunks;
    chunks = (n + rows_per_chunk - 1) / rows_per_chunk;
    float* partial = workspace(static_cast<size_t>(chunks) * d * sizeof(float));
    if (partial == nullptr) return KL_ERR_LAUNCH;
    dw_partial_kernel<<<dim3(tiles, chunks), kThreads, 0, s>>>(xp, rp, dyp, partial, n, d, rows_per_chunk);
    dw_final_kernel<<<tiles, kThreads, 0, s>>>(partial, static_cast<bf16*>(dw->data), chunks, d);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
