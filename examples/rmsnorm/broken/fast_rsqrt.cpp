/*
 * broken/fast_rsqrt.cpp — a fast-math rsqrt tuned to the declared input distribution.
 *
 * v0_naive.cpp with 1/sqrt(ms + eps) replaced by four Newton steps started at 1. With
 * x ~ normal(0, 1) the mean square is within a few percent of 1 on every listed shape, where the
 * iteration converges to f32 precision; far from 1 (large or tiny rows) it has not converged, or
 * diverges.
 *
 * Must be rejected by: the adversarial distributions of x (normal(0, 1000): mean square ~1e6),
 * named in the failing cases as "<shape>[x=normal(0, 1000)]".
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" int rmsnorm_fwd(const kl_args* a) {
    const kl_tensor* tx = kl_input(a, "x");
    const kl_tensor* tw = kl_input(a, "w");
    const kl_tensor* ty = kl_output(a, "y");
    const kl_tensor* tr = kl_output(a, "rstd");
    if (!tx || !tw || !ty || !tr) return KL_ERR_BAD_ARGS;
    const int64_t N = tx->shape[0];
    const int64_t D = tx->shape[1];
    const float eps = static_cast<float>(kl_param_f64(a, "eps", 1e-6));
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    float* y = static_cast<float*>(ty->data);
    float* rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < N; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < D; ++j) sum += x[i * D + j] * x[i * D + j];
        const float v = sum / static_cast<float>(D) + eps;
        float r = 1.0f;  // rsqrt(v) by Newton from 1: exact enough for v near 1 only
        for (int k = 0; k < 4; ++k) r = r * (1.5f - 0.5f * v * r * r);
        for (int64_t j = 0; j < D; ++j) y[i * D + j] = x[i * D + j] * r * w[j];
        rstd[i] = r;
    }
    return KL_OK;
}

extern "C" int rmsnorm_bwd(const kl_args* a) {
    const kl_tensor* tx = kl_input(a, "x");
    const kl_tensor* tw = kl_input(a, "w");
    const kl_tensor* tr = kl_input(a, "rstd");
    const kl_tensor* tdy = kl_input(a, "dy");
    const kl_tensor* tdx = kl_output(a, "dx");
    const kl_tensor* tdw = kl_output(a, "dw");
    if (!tx || !tw || !tr || !tdy || !tdx || !tdw) return KL_ERR_BAD_ARGS;
    const int64_t N = tx->shape[0];
    const int64_t D = tx->shape[1];
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    const float* rstd = static_cast<const float*>(tr->data);
    const float* dy = static_cast<const float*>(tdy->data);
    float* dx = static_cast<float*>(tdx->data);
    float* dw = static_cast<float*>(tdw->data);

    // dx, row by row.
    for (int64_t i = 0; i < N; ++i) {
        float c = 0.0f;
        for (int64_t j = 0; j < D; ++j) c += dy[i * D + j] * w[j] * x[i * D + j];
        c = c / static_cast<float>(D);
        for (int64_t j = 0; j < D; ++j)
            dx[i * D + j] = rstd[i] * dy[i * D + j] * w[j] -
                            x[i * D + j] * rstd[i] * rstd[i] * rstd[i] * c;
    }
    // dw, in a second sweep over all of x and dy.
    for (int64_t j = 0; j < D; ++j) dw[j] = 0.0f;
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < D; ++j) dw[j] += dy[i * D + j] * x[i * D + j] * rstd[i];
    return KL_OK;
}
