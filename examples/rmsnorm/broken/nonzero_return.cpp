/*
 * broken/nonzero_return.cpp — a deliberately WRONG candidate (copy of versions/v1_rowwise.cpp with one bug).
 *
 * The bug: refuses any D that is not a multiple of 8 (a candidate that only wrote the
 * vector-width-aligned case) by returning KL_ERR_UNSUPPORTED. Correct for every other D.
 *
 * Must be rejected by: the return-code check on the ragged gate shape n1000_d777 (D = 777); kloop should report
 * the returned value (1, KL_ERR_UNSUPPORTED).
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
    if (d % 8 != 0) return KL_ERR_UNSUPPORTED;  // BUG: only handles D a multiple of 8
    const float* x = static_cast<const float*>(tx->data);
    const float* w = static_cast<const float*>(tw->data);
    float* y = static_cast<float*>(ty->data);
    float* rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        float* yi = y + i * d;
        const float r =
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_squares(xi, d)) / d + eps));
        for (int64_t j = 0; j < d; ++j) yi[j] = xi[j] * r * w[j];
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
    if (d % 8 != 0) return KL_ERR_UNSUPPORTED;  // BUG: only handles D a multiple of 8

    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        const float* dyi = dy + i * d;
        float* dxi = dx + i * d;
        const float r = rstd[i];
        const float c = sum_gx(dyi, w, xi, d) / static_cast<float>(d);
        const float b = r * r * r * c;
        for (int64_t j = 0; j < d; ++j) {
            dxi[j] = r * dyi[j] * w[j] - b * xi[j];
            dw[j] += dyi[j] * xi[j] * r;
        }
    }
    return KL_OK;
}
