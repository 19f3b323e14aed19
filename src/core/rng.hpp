// kloop core: the one pseudo-random generator kloop uses, and seed derivation.
//
// Responsibility: reproducible random numbers that are bit-identical on every machine, compiler
// and standard library. That rules out std::*_distribution (their algorithms are unspecified) and
// std::log/std::sin/std::cos (libm results differ in the last bit between implementations). So:
//   - engine: xoshiro256** (Blackman & Vigna), its 256-bit state filled by splitmix64(seed);
//   - uniform01: the top 53 bits of one draw scaled by 2^-53, in [0, 1);
//   - next_below(n): Lemire's multiply-and-reject, exactly uniform on [0, n);
//   - normal: the ziggurat (Marsaglia & Tsang 2000, 256 layers; one 64-bit draw per value in
//     ~99 % of cases, a wedge or tail test otherwise), its tables and rare tests computed with the
//     elementary functions in kloop::portable, which are built only from + - * / sqrt and
//     frexp/ldexp (all exact or correctly rounded in IEEE 754), evaluated in a fixed order;
//     rng.cpp is compiled with floating-point contraction off.
// Used by check/ (input generation) and measure/ (bootstrap resampling). No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kloop {

class rng {
public:
    explicit rng(std::uint64_t seed);

    std::uint64_t next_u64();
    // Uniform on [0, 1), multiples of 2^-53.
    double uniform01();
    // Uniform integer on [0, n); n must be > 0 (n == 0 returns 0).
    std::uint64_t next_below(std::uint64_t n);
    // Standard normal N(0, 1) by the ziggurat (see the header comment); ~3 ns.
    double normal();
    // n values of normal(), the same bits in the same order as n calls (no call per value).
    void fill_normal(double* out, std::size_t n);

private:
    double normal_fast();
    // The wedge and tail cases of the ziggurat, starting from the draw `bits` (out of line).
    [[gnu::noinline]] double normal_slow(std::uint64_t bits);

    std::uint64_t m_s[4];
};

// A seed for a named sub-stream ("input:q", "trial:2", ...): splitmix64-mixes `base` with the
// 64-bit FNV-1a hash of `label`. Distinct labels give unrelated streams; same inputs, same seed.
[[nodiscard]] std::uint64_t derive_seed(std::uint64_t base, std::string_view label);

// One step of splitmix64: advances `state` and returns the next output.
std::uint64_t splitmix64_next(std::uint64_t& state);

// The seed of chunk `index` of a tensor whose stream seed is `base` (check/input_generator): the
// chunk's generator depends on (base, index) only, so chunks can be drawn on any thread in any
// order. splitmix64(base) XOR (index + 1) * 0xD1B54A32D192ED03, mixed once more by splitmix64:
// bijective in base for a fixed index and in index for a fixed base.
[[nodiscard]] std::uint64_t derive_chunk_seed(std::uint64_t base, std::uint64_t index);

// Elementary functions with results independent of the platform's libm (see the header comment).
// Accuracy is a few ulp of double, which is far below any dtype kloop stores into.
namespace portable {
// Natural logarithm, x > 0 (x <= 0 gives NaN/-inf like std::log).
[[nodiscard]] double log(double x);
// log(1 + x) accurate for small |x|, x > -1.
[[nodiscard]] double log1p(double x);
// e^x; overflows to +inf above ~709.78, underflows to 0 below ~-745.
[[nodiscard]] double exp(double x);
// sin(2*pi*u) and cos(2*pi*u) for u in [0, 1), with the reduction done exactly in turns.
void sincos_2pi(double u, double& s, double& c);
}  // namespace portable

}  // namespace kloop
