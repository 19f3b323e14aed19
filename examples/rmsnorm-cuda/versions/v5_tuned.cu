// rmsnorm-cuda v5: v4_hybrid with its two free launch constants declared as tunables for
// `kloop tune`; every other byte is v4's.
//
// kThreads  threads per block of v1's fallback kernels, the dw stage and v2's persistent forward
//           (kThreads / kTPR rows per block, kTPR <= 256): any multiple of 256 up to 1024 is
//           correct (block_sum's 32-float scratch holds 32 warps).
// kVecs     16-byte vectors per thread in v2's persistent forward (D >= 4096): a group of at most
//           256 threads covers a row when 256 * kVecs * 8 >= D, so 4 and 8 are correct up to the
//           op's D = 8192 (more vectors per thread: fewer threads per row, more registers).
// v4 chose 256 and 4 by reasoning from one profile; `kloop tune` measures the 6 combinations
// (each gated, then timed interleaved against the incumbent):
//     kloop tune --candidate kernel.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <kloop/kernel.h>

namespace {

using bf16 = __nv_bfloat16;
using bf162 = __nv_bfloat162;
constexpr int kThreads = 256;  // kloop:tune 256 512 1024

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

static int fwd_v1(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *y = kl_output(a, "y"), *rstd = kl_output(a, "rstd");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(y, KL_BF16, 2) || !is(rstd, KL_F32, 1)) return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const auto s = static_cast<cudaStream_t>(a->stream);
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

static int bwd_v1(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *rstd = kl_input(a, "rstd"), *dy = kl_input(a, "dy");
    const kl_tensor *dx = kl_output(a, "dx"), *dw = kl_output(a, "dw");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(rstd, KL_F32, 1) || !is(dy, KL_BF16, 2) || !is(dx, KL_BF16, 2) ||
        !is(dw, KL_BF16, 1))
        return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const auto s = static_cast<cudaStream_t>(a->stream);
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

namespace {

int sm_count() {
    static int n = [] {
        int dev = 0, v = 0;
        cudaGetDevice(&dev);
        return cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && v > 0 ? v : 132;
    }();
    return n;
}

__host__ __device__ constexpr int block_threads(int tpr) { return tpr < 256 ? 256 : tpr; }

// Sum over a group of kTPR threads (kTPR / 32 warps); every thread of the group gets it. Every
// thread of the block must call it (it holds barriers when kTPR > 32).
template <int kTPR>
__device__ __forceinline__ float group_sum(float v, float* smem_row) {
    v = warp_sum(v);
    if constexpr (kTPR > 32) {
        const int t = threadIdx.x % kTPR;
        if (t % 32 == 0) smem_row[t / 32] = v;
        __syncthreads();
        v = 0.f;
#pragma unroll
        for (int k = 0; k < kTPR / 32; ++k) v += smem_row[k];
        __syncthreads();
    }
    return v;
}

// v2's forward (D >= 4096): kVecs vectors per thread, kThreads-thread blocks of kThreads / kTPR
// rows, persistent over rows.
constexpr int kVecs = 4;  // kloop:tune 4 8

template <int kTPR>
__global__ void __launch_bounds__(kThreads) fwd_rows_kernel(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                                          uint4* __restrict__ y, float* __restrict__ rstd, int n, int d,
                                                          float eps) {
    constexpr int kRows = kThreads / kTPR;
    __shared__ float smem[kRows][kTPR / 32];
    const int g = threadIdx.x / kTPR, t = threadIdx.x % kTPR;
    const int nvec = d / 8;
    float wf[kVecs][8];
#pragma unroll
    for (int v = 0; v < kVecs; ++v)
        if (t + v * kTPR < nvec) unpack8(w[t + v * kTPR], wf[v]);
    for (long base = static_cast<long>(blockIdx.x) * kRows; base < n; base += static_cast<long>(gridDim.x) * kRows) {
        const long row = base + g;
        const bool active = row < n;
        float xf[kVecs][8];
        float ss = 0.f;
#pragma unroll
        for (int v = 0; v < kVecs; ++v) {
            const int i = t + v * kTPR;
            if (active && i < nvec) {
                unpack8(x[row * nvec + i], xf[v]);
#pragma unroll
                for (int k = 0; k < 8; ++k) ss += xf[v][k] * xf[v][k];
            }
        }
        const float r = rsqrtf(group_sum<kTPR>(ss, smem[g]) / d + eps);
        if (!active) continue;  // after the group sum: every thread took part in its barriers
        if (t == 0) rstd[row] = r;
#pragma unroll
        for (int v = 0; v < kVecs; ++v) {
            const int i = t + v * kTPR;
            if (i < nvec) {
                float o[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) o[k] = xf[v][k] * r * wf[v][k];
                y[row * nvec + i] = pack8(o);
            }
        }
    }
}

template <int kTPR>
__global__ void __launch_bounds__(block_threads(kTPR)) fwd_v3_kernel(const uint4* __restrict__ x,
                                                                     const uint4* __restrict__ w, uint4* __restrict__ y,
                                                                     float* __restrict__ rstd, int n, int d, float eps) {
    constexpr int kRows = block_threads(kTPR) / kTPR;
    __shared__ float smem[kRows][kTPR / 32 > 0 ? kTPR / 32 : 1];
    const int g = threadIdx.x / kTPR, t = threadIdx.x % kTPR;
    const int nvec = d / 8;
    const long row = static_cast<long>(blockIdx.x) * kRows + g;
    const bool mine = row < n && t < nvec;
    float xf[8];
    float ss = 0.f;
    if (mine) {
        unpack8(x[row * nvec + t], xf);
#pragma unroll
        for (int k = 0; k < 8; ++k) ss += xf[k] * xf[k];
    }
    const float r = rsqrtf(group_sum<kTPR>(ss, smem[g]) / d + eps);
    if (row >= n) return;  // after the group sum: every thread took part in its barriers
    if (t == 0) rstd[row] = r;
    if (t < nvec) {
        float wf[8], o[8];
        unpack8(w[t], wf);
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = xf[k] * r * wf[k];
        y[row * nvec + t] = pack8(o);
    }
}

template <int kTPR>
__global__ void __launch_bounds__(block_threads(kTPR), 1024 / block_threads(kTPR)) bwd_v3_kernel(const uint4* __restrict__ x,
                                                                     const uint4* __restrict__ w,
                                                                     const float* __restrict__ rstd,
                                                                     const uint4* __restrict__ dy, uint4* __restrict__ dx,
                                                                     float* __restrict__ partial, int n, int d) {
    constexpr int kRows = block_threads(kTPR) / kTPR;
    __shared__ float smem[kRows][kTPR / 32 > 0 ? kTPR / 32 : 1];
    const int g = threadIdx.x / kTPR, t = threadIdx.x % kTPR;
    const int nvec = d / 8;
    const bool has = t < nvec;
    const long stride = static_cast<long>(gridDim.x) * kRows;
    uint4 wv = make_uint4(0, 0, 0, 0);  // packed: 4 registers, unpacked per row
    float acc[8];
    if (has) wv = w[t];
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = 0.f;
    // The current row's operands, loaded one iteration ahead.
    long row = static_cast<long>(blockIdx.x) * kRows + g;
    uint4 xv = make_uint4(0, 0, 0, 0), dyv = make_uint4(0, 0, 0, 0);
    float r = 0.f;
    if (row < n && has) {
        xv = x[row * nvec + t];
        dyv = dy[row * nvec + t];
    }
    if (row < n) r = rstd[row];
    // The loop's condition is the block's first row, the same for every group: all threads run the
    // same number of iterations, so the group sums' barriers match.
    for (long base = static_cast<long>(blockIdx.x) * kRows; base < n; base += stride, row += stride) {
        const long next = row + stride;
        uint4 xn = make_uint4(0, 0, 0, 0), dyn = make_uint4(0, 0, 0, 0);
        float rn = 0.f;
        if (next < n && has) {
            xn = x[next * nvec + t];
            dyn = dy[next * nvec + t];
        }
        if (next < n) rn = rstd[next];
        const bool active = row < n && has;
        float xf[8], gf[8];
        float c = 0.f;
        if (active) {
            float wf[8];
            unpack8(wv, wf);
            unpack8(xv, xf);
            unpack8(dyv, gf);
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                acc[k] += gf[k] * xf[k] * r;  // dw: dy * x * rstd
                gf[k] *= wf[k];               // g = dy * w
                c += gf[k] * xf[k];
            }
        }
        c = group_sum<kTPR>(c, smem[g]) / d;
        if (active) {
            const float r3c = r * r * r * c;
            float o[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) o[k] = r * gf[k] - xf[k] * r3c;
            dx[row * nvec + t] = pack8(o);
        }
        xv = xn;
        dyv = dyn;
        r = rn;
    }
    // One fp32 partial row per group: partial[(block * kRows + g) * d + column].
    if (has) {
        float4* q = reinterpret_cast<float4*>(partial + (static_cast<size_t>(blockIdx.x) * kRows + g) * d + 8 * t);
        q[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        q[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
    }
}

// dw[j] = sum of partials[p][j], p in [0, parts): 8 row slices per column, reduced in a fixed order.
__global__ void __launch_bounds__(256) dw_reduce_kernel(const float* __restrict__ partial, bf16* __restrict__ dw, int parts,
                                                        int d) {
    __shared__ float smem[8][33];
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const int j = blockIdx.x * 32 + tx;
    float s = 0.f;
    if (j < d)
        for (int p = ty; p < parts; p += 8) s += partial[static_cast<size_t>(p) * d + j];
    smem[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && j < d) {
        float total = 0.f;
#pragma unroll
        for (int k = 0; k < 8; ++k) total += smem[k][tx];
        dw[j] = __float2bfloat16_rn(total);
    }
}

// Threads per row: D / 8 rounded up to a power of two, at least a warp; 0 = not covered.
int threads_per_row(int d) {
    if (d % 8 != 0) return 0;
    const int nvec = d / 8;
    for (int tpr : {32, 64, 128, 256, 512, 1024})
        if (tpr >= nvec) return tpr;
    return 0;
}

// v2's threads per row: the smallest group whose kVecs vectors per thread cover D.
int threads_per_row_rows(int d) {
    const int nvec = d / 8;
    for (int tpr : {32, 64, 128, 256})
        if (tpr * kVecs >= nvec) return tpr;
    return 0;
}

template <int kTPR>
void launch_fwd_rows(const kl_args* a, const uint4* x, const uint4* w, uint4* y, float* rstd, int n, int d, float eps) {
    constexpr int kRows = kThreads / kTPR;
    const long blocks_needed = (n + kRows - 1) / kRows;
    // Exactly one wave of resident blocks (v2 launched 8 per SM with room for 3 at 80
    // registers: 2.67 waves, the last a third full). Every block loops over the same number of
    // rows, so one wave has no tail.
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fwd_rows_kernel<kTPR>, kThreads, 0) != cudaSuccess ||
        per_sm < 1)
        per_sm = 1;
    const long wave = static_cast<long>(sm_count()) * per_sm;
    const int grid = static_cast<int>(blocks_needed < wave ? blocks_needed : wave);
    fwd_rows_kernel<kTPR><<<grid, kThreads, 0, static_cast<cudaStream_t>(a->stream)>>>(x, w, y, rstd, n, d, eps);
}

template <int kTPR>
void launch_fwd(const kl_args* a, const uint4* x, const uint4* w, uint4* y, float* rstd, int n, int d, float eps) {
    constexpr int kRows = block_threads(kTPR) / kTPR;
    const long blocks = (n + kRows - 1) / kRows;
    fwd_v3_kernel<kTPR><<<static_cast<unsigned>(blocks), block_threads(kTPR), 0, static_cast<cudaStream_t>(a->stream)>>>(
        x, w, y, rstd, n, d, eps);
}

template <int kTPR>
int launch_bwd(const kl_args* a, const uint4* x, const uint4* w, const float* rstd, const uint4* dy, uint4* dx, bf16* dw,
               int n, int d) {
    constexpr int kRows = block_threads(kTPR) / kTPR;
    const long blocks_needed = (n + kRows - 1) / kRows;
    // One wave of resident blocks: more would only add partials to reduce.
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bwd_v3_kernel<kTPR>, block_threads(kTPR), 0) !=
            cudaSuccess ||
        per_sm < 1)
        per_sm = 1;
    const long wave = static_cast<long>(sm_count()) * per_sm;
    const int grid = static_cast<int>(blocks_needed < wave ? blocks_needed : wave);
    const int parts = grid * kRows;
    float* partial = workspace(static_cast<size_t>(parts) * d * sizeof(float));
    if (partial == nullptr) return KL_ERR_LAUNCH;
    const auto s = static_cast<cudaStream_t>(a->stream);
    bwd_v3_kernel<kTPR><<<grid, block_threads(kTPR), 0, s>>>(x, w, rstd, dy, dx, partial, n, d);
    dw_reduce_kernel<<<(d + 31) / 32, 256, 0, s>>>(partial, dw, parts, d);
    return KL_OK;
}

}  // namespace

extern "C" int rmsnorm_fwd(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *y = kl_output(a, "y"), *rstd = kl_output(a, "rstd");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(y, KL_BF16, 2) || !is(rstd, KL_F32, 1)) return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const int tpr = threads_per_row(d);
    if (tpr == 0 || !aligned16(x->data) || !aligned16(w->data) || !aligned16(y->data)) return fwd_v1(a);
    const auto* xp = static_cast<const uint4*>(x->data);
    const auto* wp = static_cast<const uint4*>(w->data);
    auto* yp = static_cast<uint4*>(y->data);
    auto* rp = static_cast<float*>(rstd->data);
    const float eps = static_cast<float>(kl_param_f64(a, "eps", 1e-6));
    if (d >= 4096) {
        switch (threads_per_row_rows(d)) {
            case 128: launch_fwd_rows<128>(a, xp, wp, yp, rp, n, d, eps); break;
            default: launch_fwd_rows<256>(a, xp, wp, yp, rp, n, d, eps); break;
        }
        return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
    }
    switch (tpr) {
        case 32: launch_fwd<32>(a, xp, wp, yp, rp, n, d, eps); break;
        case 64: launch_fwd<64>(a, xp, wp, yp, rp, n, d, eps); break;
        case 128: launch_fwd<128>(a, xp, wp, yp, rp, n, d, eps); break;
        case 256: launch_fwd<256>(a, xp, wp, yp, rp, n, d, eps); break;
        case 512: launch_fwd<512>(a, xp, wp, yp, rp, n, d, eps); break;
        default: launch_fwd<1024>(a, xp, wp, yp, rp, n, d, eps); break;
    }
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

extern "C" int rmsnorm_bwd(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *rstd = kl_input(a, "rstd"), *dy = kl_input(a, "dy");
    const kl_tensor *dx = kl_output(a, "dx"), *dw = kl_output(a, "dw");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(rstd, KL_F32, 1) || !is(dy, KL_BF16, 2) || !is(dx, KL_BF16, 2) ||
        !is(dw, KL_BF16, 1))
        return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    const int tpr = threads_per_row(d);
    if (tpr == 0 || !aligned16(x->data) || !aligned16(w->data) || !aligned16(dy->data) || !aligned16(dx->data))
        return bwd_v1(a);
    const auto* xp = static_cast<const uint4*>(x->data);
    const auto* wp = static_cast<const uint4*>(w->data);
    const auto* dyp = static_cast<const uint4*>(dy->data);
    auto* dxp = static_cast<uint4*>(dx->data);
    const auto* rp = static_cast<const float*>(rstd->data);
    auto* dwp = static_cast<bf16*>(dw->data);
    int rc = KL_OK;
    switch (tpr) {
        case 32: rc = launch_bwd<32>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
        case 64: rc = launch_bwd<64>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
        case 128: rc = launch_bwd<128>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
        case 256: rc = launch_bwd<256>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
        case 512: rc = launch_bwd<512>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
        default: rc = launch_bwd<1024>(a, xp, wp, rp, dyp, dxp, dwp, n, d); break;
    }
    if (rc != KL_OK) return rc;
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
