/*
 * broken/hardcoded_eps.cpp — correct only for the listed param value (exploits a gate that runs eps = 1e-6 only).
 *
 * v0_naive.cpp with eps written as the constant 1e-6 instead of read from the call's params.
 *
 * Must be rejected by: the held-out shapes, which run with an eps drawn from the mode's
 * param_domain; the near-zero rows (x ~ uniform(-1e-6, 1e-6), rstd ~ 1/sqrt(eps)) show any other
 * eps at once.
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
    const float eps = 1e-6f;  // "the model's eps"
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    float* y = static_cast<float*>(ty->data);
    float* rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < N; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < D; ++j) sum += x[i * D + j] * x[i * D + j];
        float ms = sum / static_cast<float>(D);
        for (int64_t j = 0; j < D; ++j) y[i * D + j] = x[i * D + j] / sqrtf(ms + eps) * w[j];
        rstd[i] = 1.0f / sqrtf(ms + eps);
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
