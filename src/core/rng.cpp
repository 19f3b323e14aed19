// kloop core: xoshiro256** + splitmix64, the ziggurat normal sampler, and libm-independent
// elementary functions.
//
// Reproducibility rests on three things: integer arithmetic for the engine; only IEEE-754 basic
// operations (+ - * / sqrt, each correctly rounded) plus exact frexp/ldexp/floor for the
// floating-point parts, in a fixed evaluation order; and no floating-point contraction (this file
// is compiled with -ffp-contract=off, see src/core/CMakeLists.txt), so an FMA-capable target
// cannot fuse a*b+c differently from one that is not.
#include "core/rng.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace kloop {

namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// ln 2 split so that k * ln2_hi is exact for |k| < 2^11 (the low 21 bits of ln2_hi are zero).
constexpr double ln2_hi = 6.93147180369123816490e-01;
constexpr double ln2_lo = 1.90821492927058770002e-10;
constexpr double inv_ln2 = 1.44269504088896338700e+00;
constexpr double half_pi = 1.57079632679489655800e+00;

// 2 * atanh(s) = log((1 + s) / (1 - s)) for small |s| by its odd power series
// 2 (s + s^3/3 + s^5/5 + ...), Horner in z = s^2. Callers keep |s| <= 0.1716 (z <= 0.0295),
// where stopping after the z^12 term leaves a relative error below 2^-60.
double two_atanh(double s) {
    const double z = s * s;
    double p = 1.0 / 25.0;
    for (int k = 11; k >= 0; --k) p = p * z + 1.0 / static_cast<double>(2 * k + 1);
    return 2.0 * s * p;
}

// sin and cos of a in [0, pi/4] by Taylor series to the a^19 / a^18 terms (< 1e-19 error).
void sincos_small(double a, double& s, double& c) {
    const double z = a * a;
    // sin: a * (1 - z/3! + z^2/5! - ... ), coefficients (-1)^k / (2k+1)!
    double ps = 0.0;
    double pc = 0.0;
    double fs[10];
    double fc[10];
    double f = 1.0;  // running factorial
    for (int k = 0; k < 10; ++k) {
        // fc[k] = (-1)^k / (2k)!,  fs[k] = (-1)^k / (2k+1)!
        if (k > 0) f *= static_cast<double>((2 * k - 1) * (2 * k));
        fc[k] = ((k % 2) ? -1.0 : 1.0) / f;
        fs[k] = ((k % 2) ? -1.0 : 1.0) / (f * static_cast<double>(2 * k + 1));
    }
    for (int k = 9; k >= 0; --k) {
        ps = ps * z + fs[k];
        pc = pc * z + fc[k];
    }
    s = a * ps;
    c = pc;
}

// The ziggurat for the standard normal (Marsaglia & Tsang, "The Ziggurat Method for Generating
// Random Variables", JSS 5(8), 2000) with 256 layers of equal area v under f(x) = exp(-x^2/2)
// (unnormalised). Layer i = 1 … 255 is the rectangle [0, x_i] x [f(x_i), f(x_{i-1})], so
// x_i (f(x_{i-1}) - f(x_i)) = v gives x_{i-1} = sqrt(-2 ln(v / x_i + f(x_i))) down from
// x_255 = r to x_0 = 0; layer 0 is [0, r] x [0, f(r)] plus the tail beyond r, area v too.
// r and v solve this for 256 layers (computed offline to 40 digits, rounded to double):
// v = r f(r) + sqrt(pi/2) erfc(r / sqrt 2) and the recursion ends with x_1 (1 - f(x_1)) = v.
// Tables: a 53-bit position m lies under the curve in layer i when m < k[i]
// (k[i] = 2^53 x_{i-1} / x_i; k[0] = 2^53 r / (v / f(r)), k[1] = 0); w[i] = x_i / 2^53 scales m
// to x; f[i] = f(x_i). Built once with kloop::portable's exp and log and IEEE sqrt, in a fixed
// order: the same bits on every machine.
constexpr double zig_r = 3.654152885361009;
constexpr double zig_v = 0.004928673233974655;
constexpr double two_53 = 9007199254740992.0;

struct ziggurat_tables {
    std::uint64_t k[256];
    double w[256];
    double f[256];
};

ziggurat_tables make_ziggurat_tables() {
    ziggurat_tables t{};
    double dn = zig_r;
    double tn = dn;
    const double q = zig_v / portable::exp(-0.5 * dn * dn);
    t.k[0] = static_cast<std::uint64_t>((dn / q) * two_53);
    t.k[1] = 0;
    t.w[0] = q / two_53;
    t.w[255] = dn / two_53;
    t.f[0] = 1.0;
    t.f[255] = portable::exp(-0.5 * dn * dn);
    for (int i = 254; i >= 1; --i) {
        dn = std::sqrt(-2.0 * portable::log(zig_v / dn + portable::exp(-0.5 * dn * dn)));
        t.k[i + 1] = static_cast<std::uint64_t>((dn / tn) * two_53);
        tn = dn;
        t.f[i] = portable::exp(-0.5 * dn * dn);
        t.w[i] = dn / two_53;
    }
    return t;
}

const ziggurat_tables& ziggurat() {
    static const ziggurat_tables t = make_ziggurat_tables();  // thread-safe one-time init
    return t;
}

}  // namespace

std::uint64_t splitmix64_next(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

rng::rng(std::uint64_t seed) {
    std::uint64_t sm = seed;
    for (auto& s : m_s) s = splitmix64_next(sm);
}

std::uint64_t rng::next_u64() {
    const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    const std::uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

double rng::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

std::uint64_t rng::next_below(std::uint64_t n) {
    if (n == 0) return 0;
    // Lemire, "Fast random integer generation in an interval" (2019): the high word of x * n is
    // uniform on [0, n) once the low word falls outside the biased remainder.
    u128 m = static_cast<u128>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
        const std::uint64_t threshold = (0 - n) % n;
        while (low < threshold) {
            m = static_cast<u128>(next_u64()) * n;
            low = static_cast<std::uint64_t>(m);
        }
    }
    return static_cast<std::uint64_t>(m >> 64);
}

// The ziggurat's common case, small enough to inline into fill_normal's loop; the rest (the
// wedges and the tail, ~1 % of draws) is out of line in normal_slow.
inline double rng::normal_fast() {
    const ziggurat_tables& z = ziggurat();
    // One draw: bits 0-7 pick the layer, bit 8 the sign, the top 53 bits the position.
    const std::uint64_t bits = next_u64();
    const auto i = static_cast<unsigned>(bits & 0xFF);
    const std::uint64_t m = bits >> 11;
    if (m < z.k[i]) {  // inside the layer's rectangle, under the curve
        const double x = static_cast<double>(m) * z.w[i];
        // The sign bit moved into place: a coin flip is no work for a branch predictor.
        return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) ^ ((bits & 0x100) << 55));
    }
    return normal_slow(bits);
}

double rng::normal_slow(std::uint64_t bits) {
    const ziggurat_tables& z = ziggurat();
    for (;;) {
        const auto i = static_cast<unsigned>(bits & 0xFF);
        const bool negative = (bits & 0x100) != 0;
        const std::uint64_t m = bits >> 11;
        const double x = static_cast<double>(m) * z.w[i];
        if (m < z.k[i]) return negative ? -x : x;
        if (i == 0) {
            // The tail beyond r (Marsaglia 1964): t = -ln(u1) / r, e = -ln(u2), accept 2e > t^2.
            double t = 0.0;
            double e = 0.0;
            do {
                t = -portable::log(1.0 - uniform01()) / zig_r;  // 1 - u in (0, 1]
                e = -portable::log(1.0 - uniform01());
            } while (e + e <= t * t);
            return negative ? -(zig_r + t) : zig_r + t;
        }
        // The wedge of layer i: accept x with probability (f(x) - f_i) / (f_{i-1} - f_i).
        if (z.f[i] + uniform01() * (z.f[i - 1] - z.f[i]) < portable::exp(-0.5 * x * x))
            return negative ? -x : x;
        bits = next_u64();
    }
}

double rng::normal() { return normal_fast(); }

void rng::fill_normal(double* out, std::size_t n) {
    rng local = *this;  // the state in registers, not re-stored through `this` on every draw
    for (std::size_t i = 0; i < n; ++i) out[i] = local.normal_fast();
    *this = local;
}

std::uint64_t derive_seed(std::uint64_t base, std::string_view label) {
    std::uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a offset basis
    for (char ch : label) {
        h ^= static_cast<unsigned char>(ch);
        h *= 0x100000001B3ULL;  // FNV prime
    }
    std::uint64_t state = base;
    std::uint64_t mixed = splitmix64_next(state);
    state = mixed ^ h;
    return splitmix64_next(state);
}

std::uint64_t derive_chunk_seed(std::uint64_t base, std::uint64_t index) {
    // Not splitmix64(index) for the second term: the two terms would be the same function, and
    // (base, index) and (index, base) would collide.
    std::uint64_t state = base;
    state = splitmix64_next(state) ^ ((index + 1) * 0xD1B54A32D192ED03ULL);  // odd multiplier: bijective
    return splitmix64_next(state);
}

namespace portable {

double log(double x) {
    if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
    if (x == 0.0) return -std::numeric_limits<double>::infinity();
    if (std::isinf(x)) return x;
    int e = 0;
    double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1), exact
    if (m < 0.70710678118654752440) {
        m *= 2.0;  // exact
        --e;
    }
    // m in [sqrt(1/2), sqrt(2)); m - 1 is exact (Sterbenz), s in [-0.1716, 0.1716].
    const double s = (m - 1.0) / (m + 1.0);
    const double k = static_cast<double>(e);
    return k * ln2_hi + (two_atanh(s) + k * ln2_lo);
}

double log1p(double x) {
    if (std::isnan(x) || x < -1.0) return std::numeric_limits<double>::quiet_NaN();
    if (x == -1.0) return -std::numeric_limits<double>::infinity();
    if (std::isinf(x)) return x;
    if (x > -0.29 && x < 0.41) {
        // log(1 + x) = 2 atanh(x / (2 + x)), |x / (2 + x)| < 0.1716, no cancellation.
        return two_atanh(x / (2.0 + x));
    }
    // Away from 0, 1 + x loses little; correct for the rounding of u = 1 + x to first order.
    const double u = 1.0 + x;
    return log(u) + (x - (u - 1.0)) / u;
}

double exp(double x) {
    if (std::isnan(x)) return x;
    if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
    if (x < -745.1332191019412) return 0.0;
    // x = k ln2 + r, |r| <= ln2/2 (+ rounding); e^r by Taylor series to r^17/17!.
    const double k = std::floor(x * inv_ln2 + 0.5);
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    double p = 1.0;
    for (int n = 17; n >= 1; --n) p = 1.0 + p * r / static_cast<double>(n);
    return std::ldexp(p, static_cast<int>(k));
}

void sincos_2pi(double u, double& s, double& c) {
    if (!(u >= 0.0 && u < 1.0)) u = u - std::floor(u);  // fold into [0, 1); NaN stays NaN
    if (std::isnan(u)) {
        s = c = u;
        return;
    }
    const double t = u * 4.0;               // exact
    const double q = std::floor(t);         // quadrant 0..3
    const double f = t - q;                 // exact (Sterbenz), in [0, 1)
    double sp = 0.0;                        // sin(f * pi/2)
    double cp = 0.0;                        // cos(f * pi/2)
    if (f <= 0.5) {
        sincos_small(f * half_pi, sp, cp);
    } else {
        sincos_small((1.0 - f) * half_pi, cp, sp);  // 1 - f exact; complementary angle swaps
    }
    switch (static_cast<int>(q) & 3) {
        case 0: s = sp; c = cp; break;
        case 1: s = cp; c = -sp; break;
        case 2: s = -sp; c = -cp; break;
        default: s = -cp; c = sp; break;
    }
}

}  // namespace portable

}  // namespace kloop
