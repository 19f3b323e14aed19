// rmsnorm-cuda reference: the naive, obviously correct kernels every candidate is compared with.
//
//   fwd:  rstd[i] = 1 / sqrt(mean_j x[i,j]^2 + eps)        y[i,j] = x[i,j] * rstd[i] * w[j]
//   bwd:  g = dy * w    c[i] = mean_j g[i,j] * x[i,j]        (rstd is an input, as saved by fwd)
//         dx[i,j] = rstd[i] * g[i,j] - x[i,j] * rstd[i]^3 * c[i]
//         dw[j]   = sum_i dy[i,j] * x[i,j] * rstd[i]
//
// One thread per row (fwd, dx) and one thread per column (dw), plain loops, every sum and
// product in double, results rounded to bf16 (rstd to f32) only when stored. Double rather than
// the fp32 a candidate uses keeps the reference's own rounding out of the error budget (a
// sequential fp32 sum over 16k rows would carry ~1e-5 relative error of its own). Slow by design:
// it runs only on checked calls. Every tensor's presence, dtype and shape is checked.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <kloop/kernel.h>

namespace {

using bf16 = __nv_bfloat16;

__global__ void fwd_ref_kernel(const bf16* x, const bf16* w, bf16* y, float* rstd, long n, long d, double eps) {
    const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    double ss = 0;
    for (long j = 0; j < d; ++j) {
        const double v = __bfloat162float(x[i * d + j]);
        ss += v * v;
    }
    const double r = 1.0 / sqrt(ss / static_cast<double>(d) + eps);
    rstd[i] = static_cast<float>(r);
    for (long j = 0; j < d; ++j)
        y[i * d + j] = __float2bfloat16_rn(static_cast<float>(
            static_cast<double>(__bfloat162float(x[i * d + j])) * r * static_cast<double>(__bfloat162float(w[j]))));
}

__global__ void dx_ref_kernel(const bf16* x, const bf16* w, const float* rstd, const bf16* dy, bf16* dx, long n, long d) {
    const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const double r = rstd[i];
    double c = 0;
    for (long j = 0; j < d; ++j)
        c += static_cast<double>(__bfloat162float(dy[i * d + j])) * __bfloat162float(w[j]) * __bfloat162float(x[i * d + j]);
    c /= static_cast<double>(d);
    for (long j = 0; j < d; ++j) {
        const double g = static_cast<double>(__bfloat162float(dy[i * d + j])) * __bfloat162float(w[j]);
        dx[i * d + j] = __float2bfloat16_rn(static_cast<float>(r * g - __bfloat162float(x[i * d + j]) * r * r * r * c));
    }
}

__global__ void dw_ref_kernel(const bf16* x, const float* rstd, const bf16* dy, bf16* dw, long n, long d) {
    const long j = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (j >= d) return;
    double s = 0;
    for (long i = 0; i < n; ++i)
        s += static_cast<double>(__bfloat162float(dy[i * d + j])) * __bfloat162float(x[i * d + j]) * rstd[i];
    dw[j] = __float2bfloat16_rn(static_cast<float>(s));
}

bool is(const kl_tensor* t, kl_dtype dt, int ndim) { return t != nullptr && t->dtype == dt && t->ndim == ndim; }

int launched() { return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH; }

}  // namespace

extern "C" int rmsnorm_fwd_ref(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *y = kl_output(a, "y"), *rstd = kl_output(a, "rstd");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(y, KL_BF16, 2) || !is(rstd, KL_F32, 1)) return KL_ERR_BAD_ARGS;
    const long n = x->shape[0], d = x->shape[1];
    if (w->shape[0] != d || y->shape[0] != n || y->shape[1] != d || rstd->shape[0] != n) return KL_ERR_UNSUPPORTED;
    const auto s = static_cast<cudaStream_t>(a->stream);
    fwd_ref_kernel<<<static_cast<unsigned>((n + 127) / 128), 128, 0, s>>>(
        static_cast<const bf16*>(x->data), static_cast<const bf16*>(w->data), static_cast<bf16*>(y->data),
        static_cast<float*>(rstd->data), n, d, kl_param_f64(a, "eps", 1e-6));
    return launched();
}

extern "C" int rmsnorm_bwd_ref(const kl_args* a) {
    const kl_tensor *x = kl_input(a, "x"), *w = kl_input(a, "w"), *rstd = kl_input(a, "rstd"), *dy = kl_input(a, "dy");
    const kl_tensor *dx = kl_output(a, "dx"), *dw = kl_output(a, "dw");
    if (!is(x, KL_BF16, 2) || !is(w, KL_BF16, 1) || !is(rstd, KL_F32, 1) || !is(dy, KL_BF16, 2) || !is(dx, KL_BF16, 2) ||
        !is(dw, KL_BF16, 1))
        return KL_ERR_BAD_ARGS;
    const long n = x->shape[0], d = x->shape[1];
    if (w->shape[0] != d || rstd->shape[0] != n || dy->shape[0] != n || dy->shape[1] != d || dx->shape[0] != n ||
        dx->shape[1] != d || dw->shape[0] != d)
        return KL_ERR_UNSUPPORTED;
    const auto s = static_cast<cudaStream_t>(a->stream);
    const auto* xp = static_cast<const bf16*>(x->data);
    const auto* dyp = static_cast<const bf16*>(dy->data);
    const auto* rp = static_cast<const float*>(rstd->data);
    dx_ref_kernel<<<static_cast<unsigned>((n + 127) / 128), 128, 0, s>>>(xp, static_cast<const bf16*>(w->data), rp, dyp,
                                                                       static_cast<bf16*>(dx->data), n, d);
    dw_ref_kernel<<<static_cast<unsigned>((d + 127) / 128), 128, 0, s>>>(xp, rp, dyp, static_cast<bf16*>(dw->data), n, d);
    return launched();
}
