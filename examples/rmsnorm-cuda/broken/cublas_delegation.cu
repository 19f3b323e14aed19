// rmsnorm-cuda broken/cublas_delegation: v1's dx kernel, but dw handed to cuBLAS — the products
// dy * x * rstd are written to a bf16 scratch matrix and summed over the rows by cublasGemmEx
// (ones(1 x N) . P). The spec links no vendor library, so the candidate dlopen()s
// libcublas.so.13 itself. Its numbers pass (bf16 products, fp32 accumulation: rel_rms ~1e-3).
//
// Rejected by: `census_vendor_kernels` (the cuBLAS kernels — nvjet_*, gemv/gemm kernels with
// cublas in their names — appear in the census of every bwd call: delegation) and
// `imported_symbols` (fail: imports dlopen / dlsym, dynamic_loading — a library that fetched
// cublasGemmEx by name; one linked with -lcublas would fail on libcublas.so.13 in DT_NEEDED and
// on the cublas* imports, vendor_library).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <dlfcn.h>

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

// P[i, j] = dy[i, j] * x[i, j] * rstd[i] in bf16, and a vector of ones for the GEMM.
__global__ void product_kernel(const bf16* __restrict__ x, const float* __restrict__ rstd, const bf16* __restrict__ dy,
                               bf16* __restrict__ p, bf16* __restrict__ ones, int n, int d) {
    const size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (k < static_cast<size_t>(n) * d)
        p[k] = __float2bfloat16_rn(__bfloat162float(dy[k]) * __bfloat162float(x[k]) * rstd[k / d]);
    if (k < static_cast<size_t>(n)) ones[k] = __float2bfloat16(1.f);
}

// cuBLAS reached at run time: the spec links no vendor library, so the candidate opens it itself.
struct cublas {
    bool ok = false;
    cublasHandle_t handle = nullptr;
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                           cudaDataType, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                           cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

const cublas& load_cublas() {
    static cublas b = [] {
        cublas r;
        void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) return r;
        auto create = reinterpret_cast<cublasStatus_t (*)(cublasHandle_t*)>(dlsym(lib, "cublasCreate_v2"));
        r.set_stream = reinterpret_cast<decltype(r.set_stream)>(dlsym(lib, "cublasSetStream_v2"));
        r.gemm = reinterpret_cast<decltype(r.gemm)>(dlsym(lib, "cublasGemmEx"));
        r.ok = create != nullptr && r.set_stream != nullptr && r.gemm != nullptr && create(&r.handle) == CUBLAS_STATUS_SUCCESS;
        return r;
    }();
    return b;
}

void* scratch(size_t bytes) {
    static void* p = nullptr;
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

extern "C" int rmsnorm_bwd(const kl_args* a) {
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

    // dw = ones(1 x N) . P(N x D) with P = dy * x * rstd in bf16: handed to cuBLAS.
    const cublas& blas = load_cublas();
    if (!blas.ok) return KL_ERR_UNSUPPORTED;
    bf16* p = static_cast<bf16*>(scratch(static_cast<size_t>(n) * d * sizeof(bf16) + static_cast<size_t>(n) * sizeof(bf16)));
    if (p == nullptr) return KL_ERR_LAUNCH;
    bf16* ones = p + static_cast<size_t>(n) * d;
    product_kernel<<<(static_cast<unsigned>(static_cast<size_t>(n) * d) + kThreads - 1) / kThreads, kThreads, 0, s>>>(
        xp, rp, dyp, p, ones, n, d);
    blas.set_stream(blas.handle, s);
    const float alpha = 1.f, beta = 0.f;
    // Column-major view: P is D x N (lda = D); dw (D x 1) = P . ones (N x 1).
    if (blas.gemm(blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, d, 1, n, &alpha, p, CUDA_R_16BF, d, ones, CUDA_R_16BF, n, &beta,
                  dw->data, CUDA_R_16BF, d, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        return KL_ERR_LAUNCH;
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
