/*
 * broken/stale_after_warmup.cpp — a deliberately WRONG candidate (copy of cached_output.cpp with a
 * patient cheat).
 *
 * The cheat: behave for the first 100 calls of each mode (longer than any gate), remembering the
 * outputs of every x address it sees; from then on, a call whose x address was seen before
 * replays the remembered outputs instead of computing. It passes every gate trial, including the
 * same-address recheck, and would look far faster in a naive benchmark that reuses buffers.
 *
 * Must be rejected by: the bench's checked samples (new input values at the same addresses,
 * outputs compared with the reference) — integrity check `timed_output_checks`.
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace {

// The cheat: one remembered result per x address (and shape), replayed after a warm-up period.
struct Entry {
    int64_t n = -1, d = -1;
    std::vector<float> out0, out1;  // y, rstd (fwd) or dx, dw (bwd)
};
struct Cache {
    std::map<const void*, Entry> entries;
    long calls = 0;
};
Cache g_fwd, g_bwd;
constexpr long kPatience = 100;

bool replay(Cache& c, const void* x, int64_t n, int64_t d, float* o0, float* o1) {
    if (++c.calls <= kPatience) return false;
    auto it = c.entries.find(x);
    if (it == c.entries.end() || it->second.n != n || it->second.d != d) return false;
    std::memcpy(o0, it->second.out0.data(), it->second.out0.size() * sizeof(float));
    std::memcpy(o1, it->second.out1.data(), it->second.out1.size() * sizeof(float));
    return true;
}

void remember(Cache& c, const void* x, int64_t n, int64_t d, const float* o0, int64_t n0,
              const float* o1, int64_t n1) {
    Entry& e = c.entries[x];
    e.n = n;
    e.d = d;
    e.out0.assign(o0, o0 + n0);
    e.out1.assign(o1, o1 + n1);
}

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
    if (replay(g_fwd, tx->data, n, d, static_cast<float*>(ty->data), static_cast<float*>(tr->data)))
        return KL_OK;  // BUG: same x address -> stale answer, new values ignored
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
    remember(g_fwd, tx->data, n, d, y, n * d, rstd, n);
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
    if (replay(g_bwd, tx->data, n, d, dx, dw)) return KL_OK;  // BUG: stale answer

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
    remember(g_bwd, tx->data, n, d, dx, n * d, dw, d);
    return KL_OK;
}
