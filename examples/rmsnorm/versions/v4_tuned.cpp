/*
 * v4_tuned.cpp — v2_streaming with its reduction width declared as a tunable for `kloop tune`.
 *
 * The code is v2_streaming's, byte for byte, except the line that declares kLanes: the number
 * of independent f32 partial sums each reduction keeps (combined pairwise, so a power of two).
 * 32 was picked by hand in v1; whether 16 or 64 lanes suit this machine's vector units and
 * register file better is a measurement, not a guess:
 *
 *     kloop tune --candidate kernel.cpp        # 3 points: kLanes = 16, 32, 64
 *
 * Each value is a correct kernel (any power of two keeps the pairwise combine exact and every
 * tail handled), so the search only chooses speed; the gate still runs on every point.
 */
#include <kloop/kernel.h>

#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

// ---- a minimal vector layer: kWidth floats per vf ------------------------------------------
#if defined(__AVX512F__)
constexpr int kWidth = 16;
using vf = __m512;
inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
inline vf vset(float v) { return _mm512_set1_ps(v); }
inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
inline vf vfmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }  // a*b + c
inline vf vfmsub(vf a, vf b, vf c) { return _mm512_fmsub_ps(a, b, c); }  // a*b - c
inline void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline void vstream(float* p, vf v) { _mm512_stream_ps(p, v); }  // p aligned to 64 bytes
inline void vfence() { _mm_sfence(); }
#elif defined(__AVX__)
constexpr int kWidth = 8;
using vf = __m256;
inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
inline vf vset(float v) { return _mm256_set1_ps(v); }
inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
#if defined(__FMA__)
inline vf vfmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf vfmsub(vf a, vf b, vf c) { return _mm256_fmsub_ps(a, b, c); }
#else
inline vf vfmadd(vf a, vf b, vf c) { return _mm256_add_ps(_mm256_mul_ps(a, b), c); }
inline vf vfmsub(vf a, vf b, vf c) { return _mm256_sub_ps(_mm256_mul_ps(a, b), c); }
#endif
inline void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline void vstream(float* p, vf v) { _mm256_stream_ps(p, v); }  // p aligned to 32 bytes
inline void vfence() { _mm_sfence(); }
#else
constexpr int kWidth = 1;
using vf = float;
inline vf vload(const float* p) { return *p; }
inline vf vset(float v) { return v; }
inline vf vmul(vf a, vf b) { return a * b; }
inline vf vfmadd(vf a, vf b, vf c) { return a * b + c; }
inline vf vfmsub(vf a, vf b, vf c) { return a * b - c; }
inline void vstore(float* p, vf v) { *p = v; }
inline void vstream(float* p, vf v) { *p = v; }
inline void vfence() {}
#endif

// Elements to handle one by one before p + k is aligned for vstream (all of them when p is not
// even float-aligned, which kloop never does, but costs nothing to allow).
inline int64_t head_len(const float* p, int64_t d) {
    const uintptr_t bytes = kWidth * sizeof(float);
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    if (addr % sizeof(float) != 0) return d;
    const int64_t k = static_cast<int64_t>(((bytes - addr % bytes) % bytes) / sizeof(float));
    return k < d ? k : d;
}

// ---- reductions, as in v1 -------------------------------------------------------------------
constexpr int kLanes = 32;  // kloop:tune 16 32 64

inline float combine(float* acc) {
    for (int s = kLanes / 2; s > 0; s /= 2)
        for (int k = 0; k < s; ++k) acc[k] += acc[k + s];
    return acc[0];
}

inline float sum_squares(const float* __restrict x, int64_t d) {
    float acc[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= d; j += kLanes)
        for (int k = 0; k < kLanes; ++k) acc[k] += x[j + k] * x[j + k];
    float tail = 0.0f;
    for (; j < d; ++j) tail += x[j] * x[j];
    return combine(acc) + tail;
}

inline float sum_gx(const float* __restrict dy, const float* __restrict w,
                    const float* __restrict x, int64_t d) {
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
    const float* __restrict x = static_cast<const float*>(tx->data);
    const float* __restrict w = static_cast<const float*>(tw->data);
    float* __restrict y = static_cast<float*>(ty->data);
    float* __restrict rstd = static_cast<float*>(tr->data);

    for (int64_t i = 0; i < n; ++i) {
        const float* __restrict xi = x + i * d;
        float* __restrict yi = y + i * d;
        const float r =
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_squares(xi, d)) / d + eps));
        int64_t j = 0;
        for (const int64_t head = head_len(yi, d); j < head; ++j) yi[j] = xi[j] * r * w[j];
        const vf vr = vset(r);
        for (; j + kWidth <= d; j += kWidth) vstream(yi + j, vmul(vmul(vload(xi + j), vr), vload(w + j)));
        for (; j < d; ++j) yi[j] = xi[j] * r * w[j];
        rstd[i] = r;
    }
    vfence();
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
    const float* __restrict x = static_cast<const float*>(tx->data);
    const float* __restrict w = static_cast<const float*>(tw->data);
    const float* __restrict rstd = static_cast<const float*>(tr->data);
    const float* __restrict dy = static_cast<const float*>(tdy->data);
    float* __restrict dx = static_cast<float*>(tdx->data);
    float* __restrict dw = static_cast<float*>(tdw->data);

    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float* __restrict xi = x + i * d;
        const float* __restrict dyi = dy + i * d;
        float* __restrict dxi = dx + i * d;
        const float r = rstd[i];
        const float b = r * r * r * (sum_gx(dyi, w, xi, d) / static_cast<float>(d));
        int64_t j = 0;
        for (const int64_t head = head_len(dxi, d); j < head; ++j) {
            dxi[j] = r * dyi[j] * w[j] - b * xi[j];
            dw[j] += dyi[j] * xi[j] * r;
        }
        const vf vr = vset(r), vb = vset(b);
        for (; j + kWidth <= d; j += kWidth) {
            const vf vx = vload(xi + j), vdy = vload(dyi + j);
            vstream(dxi + j, vfmsub(vmul(vr, vdy), vload(w + j), vmul(vb, vx)));
            vstore(dw + j, vfmadd(vmul(vdy, vx), vr, vload(dw + j)));
        }
        for (; j < d; ++j) {
            dxi[j] = r * dyi[j] * w[j] - b * xi[j];
            dw[j] += dyi[j] * xi[j] * r;
        }
    }
    vfence();
    return KL_OK;
}
