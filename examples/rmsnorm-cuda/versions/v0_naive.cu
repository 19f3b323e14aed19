// rmsnorm-cuda v0: the first thing one writes — one thread per row for fwd and dx, one thread
// per column for dw, fp32 sums.
//
// Correct but slow: a warp's 32 threads walk 32 different rows, so every load touches 32 cache
// lines (uncoalesced), and 16k rows give only 16k threads (a fraction of the H200's 132 SMs x
// 2048). dw has only D threads, each summing N rows. The baseline the other versions are
// measured against.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <kloop/kernel.h>

namespace {

using bf16 = __nv_bfloat16;

__global__ void fwd_kernel(const bf16* x, const bf16* w, bf16* y, float* rstd, int n, int d, float eps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const bf16* xr = x + static_cast<size_t>(i) * d;
    float ss = 0.f;
    for (int j = 0; j < d; ++j) {
        const float v = __bfloat162float(xr[j]);
        ss += v * v;
    }
    const float r = rsqrtf(ss / d + eps);
    rstd[i] = r;
    bf16* yr = y + static_cast<size_t>(i) * d;
    for (int j = 0; j < d; ++j) yr[j] = __float2bfloat16_rn(__bfloat162float(xr[j]) * r * __bfloat162float(w[j]));
}

__global__ void dx_kernel(const bf16* x, const bf16* w, const float* rstd, const bf16* dy, bf16* dx, int n, int d) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const size_t off = static_cast<size_t>(i) * d;
    const float r = rstd[i];
    float c = 0.f;
    for (int j = 0; j < d; ++j) c += __bfloat162float(dy[off + j]) * __bfloat162float(w[j]) * __bfloat162float(x[off + j]);
    c /= d;
    for (int j = 0; j < d; ++j) {
        const float g = __bfloat162float(dy[off + j]) * __bfloat162float(w[j]);
        dx[off + j] = __float2bfloat16_rn(r * g - __bfloat162float(x[off + j]) * r * r * r * c);
    }
}

__global__ void dw_kernel(const bf16* x, const float* rstd, const bf16* dy, bf16* dw, int n, int d) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    float s = 0.f;
    for (int i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i) * d + j;
        s += __bfloat162float(dy[k]) * __bfloat162float(x[k]) * rstd[i];
    }
    dw[j] = __float2bfloat16_rn(s);
}

bool is(const kl_tensor* t, kl_dtype dt, int ndim) { return t != nullptr && t->dtype == dt && t->ndim == ndim; }

}  // namespace

extern "C" int rmsnorm_fwd(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *y = kl_output(a, "y"), *rstd = kl_output(a, "rstd");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(y, KL_BF16, 2) || !is(rstd, KL_F32, 1)) return KL_ERR_BAD_ARGS;
    const int n = static_cast<int>(x->shape[0]), d = static_cast<int>(x->shape[1]);
    fwd_kernel<<<(n + 127) / 128, 128, 0, static_cast<cudaStream_t>(a->stream)>>>(
        static_cast<const bf16*>(x->data), static_cast<const bf16*>(w->data), static_cast<bf16*>(y->data),
        static_cast<float*>(rstd->data), n, d, static_cast<float>(kl_param_f64(a, "eps", 1e-6)));
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
    const auto* dyp = static_cast<const bf16*>(dy->data);
    const auto* rp = static_cast<const float*>(rstd->data);
    dx_kernel<<<(n + 127) / 128, 128, 0, s>>>(xp, static_cast<const bf16*>(w->data), rp, dyp, static_cast<bf16*>(dx->data), n, d);
    dw_kernel<<<(d + 127) / 128, 128, 0, s>>>(xp, rp, dyp, static_cast<bf16*>(dw->data), n, d);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}
