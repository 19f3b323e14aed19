/*
 * v3_slower.cpp — v1_rowwise split into two sweeps: a genuine, correct, but SLOWER variant.
 *
 * It exists to show a negative iteration in `kloop demo` (docs/loop.md): a plausible-sounding
 * change ("separate the reduction pass from the scaling pass so each loop is simpler") that
 * makes the kernel read its big inputs twice. Once a row no longer sits in cache between the
 * two sweeps, every element of x (and dy in bwd) comes from memory twice, so the bench shapes
 * that do not fit in cache get slower; nothing gets faster.
 *
 * Changes from v1_rowwise:
 *   - fwd: pass 1 computes rstd for every row (writing the rstd output), pass 2 re-reads x and
 *     writes y = x * rstd * w;
 *   - bwd: pass 1 computes c[i] = mean_j dy*w*x for every row into a scratch vector, pass 2
 *     re-reads x and dy to write dx and accumulate dw.
 * Precision is identical to v1 (same partial-sum order).
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>
#include <vector>

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

    // Pass 1: the reduction of every row.
    for (int64_t i = 0; i < n; ++i)
        rstd[i] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_squares(x + i * d, d)) / d + eps));
    // Pass 2: the scaling, reading x again.
    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        float* yi = y + i * d;
        const float r = rstd[i];
        for (int64_t j = 0; j < d; ++j) yi[j] = xi[j] * r * w[j];
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

    // Pass 1: the reduction of every row.
    std::vector<float> cs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) cs[static_cast<size_t>(i)] = sum_gx(dy + i * d, w, x + i * d, d) / static_cast<float>(d);
    // Pass 2: dx and dw, reading x and dy again.
    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float* xi = x + i * d;
        const float* dyi = dy + i * d;
        float* dxi = dx + i * d;
        const float r = rstd[i];
        const float b = r * r * r * cs[static_cast<size_t>(i)];
        for (int64_t j = 0; j < d; ++j) {
            dxi[j] = r * dyi[j] * w[j] - b * xi[j];
            dw[j] += dyi[j] * xi[j] * r;
        }
    }
    return KL_OK;
}
