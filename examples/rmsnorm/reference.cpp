/*
 * reference.cpp — the reference implementation of the rmsnorm example (frozen in op.toml).
 *
 * Written to be obviously correct, not fast: every reduction accumulates in double, every
 * formula is spelled out exactly as in the maths below, and every result is rounded to f32
 * only when it is stored.
 *
 *   fwd:  rstd[i]  = 1 / sqrt( mean_j x[i,j]^2 + eps )
 *         y[i,j]   = x[i,j] * rstd[i] * w[j]
 *
 *   bwd:  (rstd is an input, as saved by fwd; it is NOT recomputed from x)
 *         g[i,j]   = dy[i,j] * w[j]
 *         c[i]     = mean_j g[i,j] * x[i,j]
 *         dx[i,j]  = rstd[i] * g[i,j] - x[i,j] * rstd[i]^3 * c[i]
 *         dw[j]    = sum_i dy[i,j] * x[i,j] * rstd[i]
 *
 * Tensors are looked up by name; N and D come from the shape of x, and every other tensor's
 * shape is checked against them. A missing or misshapen tensor returns KL_ERR_BAD_ARGS; a dtype
 * other than f32 or a non-host tensor returns KL_ERR_UNSUPPORTED.
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

// 0 if t is a host f32 tensor of exactly the given shape, else the error code to return.
int check(const kl_tensor* t, int32_t ndim, int64_t d0, int64_t d1) {
    if (t == nullptr || t->data == nullptr) return KL_ERR_BAD_ARGS;
    if (t->dtype != KL_F32 || t->device != KL_HOST) return KL_ERR_UNSUPPORTED;
    if (t->ndim != ndim) return KL_ERR_BAD_ARGS;
    if (t->shape[0] != d0) return KL_ERR_BAD_ARGS;
    if (ndim == 2 && t->shape[1] != d1) return KL_ERR_BAD_ARGS;
    return 0;
}

// N and D from the shape of x (a 2-D tensor); false when x is absent or not 2-D.
bool rows_cols(const kl_tensor* x, int64_t* n, int64_t* d) {
    if (x == nullptr || x->ndim != 2 || x->shape[0] < 0 || x->shape[1] <= 0) return false;
    *n = x->shape[0];
    *d = x->shape[1];
    return true;
}

}  // namespace

extern "C" int rmsnorm_fwd_ref(const kl_args* a) {
    const kl_tensor* tx = kl_input(a, "x");
    const kl_tensor* tw = kl_input(a, "w");
    const kl_tensor* ty = kl_output(a, "y");
    const kl_tensor* tr = kl_output(a, "rstd");
    int64_t n = 0, d = 0;
    if (!rows_cols(tx, &n, &d)) return KL_ERR_BAD_ARGS;
    int rc = 0;
    if ((rc = check(tx, 2, n, d)) != 0) return rc;
    if ((rc = check(tw, 1, d, 0)) != 0) return rc;
    if ((rc = check(ty, 2, n, d)) != 0) return rc;
    if ((rc = check(tr, 1, n, 0)) != 0) return rc;

    const double eps = kl_param_f64(a, "eps", 1e-6);
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    float* y = static_cast<float*>(ty->data);
    float* rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        double sum_sq = 0.0;
        for (int64_t j = 0; j < d; ++j) sum_sq += static_cast<double>(xi[j]) * xi[j];
        const double r = 1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps);
        for (int64_t j = 0; j < d; ++j)
            y[i * d + j] = static_cast<float>(static_cast<double>(xi[j]) * r * w[j]);
        rstd[i] = static_cast<float>(r);
    }
    return KL_OK;
}

extern "C" int rmsnorm_bwd_ref(const kl_args* a) {
    const kl_tensor* tx = kl_input(a, "x");
    const kl_tensor* tw = kl_input(a, "w");
    const kl_tensor* tr = kl_input(a, "rstd");
    const kl_tensor* tdy = kl_input(a, "dy");
    const kl_tensor* tdx = kl_output(a, "dx");
    const kl_tensor* tdw = kl_output(a, "dw");
    int64_t n = 0, d = 0;
    if (!rows_cols(tx, &n, &d)) return KL_ERR_BAD_ARGS;
    int rc = 0;
    if ((rc = check(tx, 2, n, d)) != 0) return rc;
    if ((rc = check(tw, 1, d, 0)) != 0) return rc;
    if ((rc = check(tr, 1, n, 0)) != 0) return rc;
    if ((rc = check(tdy, 2, n, d)) != 0) return rc;
    if ((rc = check(tdx, 2, n, d)) != 0) return rc;
    if ((rc = check(tdw, 1, d, 0)) != 0) return rc;

    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    const float* rstd = static_cast<const float*>(tr->data);
    const float* dy = static_cast<const float*>(tdy->data);
    float* dx = static_cast<float*>(tdx->data);
    float* dw = static_cast<float*>(tdw->data);

    std::vector<double> dw_acc(static_cast<size_t>(d), 0.0);
    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        const float* dyi = dy + i * d;
        const double r = rstd[i];

        double sum_gx = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double g = static_cast<double>(dyi[j]) * w[j];
            sum_gx += g * xi[j];
        }
        const double c = sum_gx / static_cast<double>(d);

        for (int64_t j = 0; j < d; ++j) {
            const double g = static_cast<double>(dyi[j]) * w[j];
            dx[i * d + j] = static_cast<float>(r * g - static_cast<double>(xi[j]) * r * r * r * c);
            dw_acc[static_cast<size_t>(j)] += static_cast<double>(dyi[j]) * xi[j] * r;
        }
    }
    for (int64_t j = 0; j < d; ++j) dw[j] = static_cast<float>(dw_acc[static_cast<size_t>(j)]);
    return KL_OK;
}
