/*
 * broken/input_modified.cpp — a deliberately WRONG candidate (copy of versions/v1_rowwise.cpp with one bug).
 *
 * The bug: uses the input x as scratch. fwd normalises x in place (x[i,j] *= rstd[i] * w[j])
 * and copies it to y; bwd overwrites x with x * rstd and works from that. The outputs are
 * correct (within tolerance); only the input buffer is destroyed.
 *
 * Must be rejected by: the inputs-unchanged check (x compared with its copy from before the call).
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr int kLanes = 32;

// Combine the kLanes partial sums pairwise (a fixed tree, so the result is deterministic).
inline float combine(float* acc) {
    for (int s = kLanes / 2; s > 0; s /= 2)
        for (int k = 0; k < s; ++k) acc[k] += acc[k + s];
    return acc[0];
}

inline float sum_squares(const float* x, int64_t d) {
    float acc[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= d; j += kLanes)
        for (int k = 0; k < kLanes; ++k) acc[k] += x[j + k] * x[j + k];
    float tail = 0.0f;
    for (; j < d; ++j) tail += x[j] * x[j];
    return combine(acc) + tail;
}

inline float sum_gx(const float* dy, const float* w, const float* x, int64_t d) {
    float acc[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= d; j += kLanes)
        for (int k = 0; k < kLanes; ++k) acc[k] += dy[j + k] * w[j + k] * x[j + k];
    float tail = 0.0f;
    for (; j < d; ++j) tail += dy[j] * w[j] * x[j];
    return combine(acc) + tail;
}

}  // namespace

extern "C" int rmsnorm_fwd(const kl_args* a) {
    const kl_tensor* tx = kl_input(a, "x");
    const kl_tensor* tw = kl_input(a, "w");
    const kl_tensor* ty = kl_output(a, "y");
    const kl_tensor* tr = kl_output(a, "rstd");
    if (!tx || !tw || !ty || !tr) return KL_ERR_BAD_ARGS;
    const int64_t n = tx->shape[0];
    const int64_t d = tx->shape[1];
    const double eps = kl_param_f64(a, "eps", 1e-6);
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    float* y = static_cast<float*>(ty->data);
    float* rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        float* yi = y + i * d;
        const float r =
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_squares(xi, d)) / d + eps));
        float* xm = static_cast<float*>(tx->data) + i * d;  // BUG: writable view of the input
        for (int64_t j = 0; j < d; ++j) xm[j] = xi[j] * r * w[j];  // normalise x in place...
        for (int64_t j = 0; j < d; ++j) yi[j] = xm[j];             // ...then copy it out
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
    const int64_t n = tx->shape[0];
    const int64_t d = tx->shape[1];
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    const float* rstd = static_cast<const float*>(tr->data);
    const float* dy = static_cast<const float*>(tdy->data);
    float* dx = static_cast<float*>(tdx->data);
    float* dw = static_cast<float*>(tdw->data);

    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        const float* dyi = dy + i * d;
        float* dxi = dx + i * d;
        const float r = rstd[i];
        // BUG: overwrite x with x_hat = x * rstd in place, then work with x_hat:
        //   dx = rstd * (g - x_hat * mean(g * x_hat)),  dw += dy * x_hat.
        float* xh = static_cast<float*>(tx->data) + i * d;
        for (int64_t j = 0; j < d; ++j) xh[j] = xi[j] * r;
        const float ch = sum_gx(dyi, w, xh, d) / static_cast<float>(d);
        for (int64_t j = 0; j < d; ++j) {
            dxi[j] = r * (dyi[j] * w[j] - xh[j] * ch);
            dw[j] += dyi[j] * xh[j];
        }
    }
    return KL_OK;
}
