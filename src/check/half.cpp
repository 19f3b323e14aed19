// kloop check: f16 / bf16 conversions by bit manipulation.
#include "check/half.hpp"

#include <bit>

namespace kloop::check {

namespace {

// Rounds a double into a binary format with `exp_bits` exponent bits and `man_bits` stored
// mantissa bits (IEEE layout: sign, biased exponent, mantissa), round to nearest, ties to even.
// Returns the encoding in the low (1 + exp_bits + man_bits) bits.
std::uint32_t round_double_to_format(double d, int exp_bits, int man_bits) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    const auto sign = static_cast<std::uint32_t>(bits >> 63) << (exp_bits + man_bits);
    const std::uint32_t exp_all_ones = ((1u << exp_bits) - 1u) << man_bits;
    const int d_exp = static_cast<int>((bits >> 52) & 0x7FF);
    const std::uint64_t d_man = bits & ((std::uint64_t{1} << 52) - 1);

    if (d_exp == 0x7FF) {
        if (d_man == 0) return sign | exp_all_ones;  // +-Inf
        // NaN: quiet bit set, keep the top payload bits that fit.
        const std::uint32_t quiet = 1u << (man_bits - 1);
        const auto payload = static_cast<std::uint32_t>(d_man >> (52 - man_bits)) & (quiet - 1u);
        return sign | exp_all_ones | quiet | payload;
    }
    if (d_exp == 0) return sign;  // double zero or subnormal (< 2^-1022): rounds to +-0 here

    const int bias = (1 << (exp_bits - 1)) - 1;
    const int e = d_exp - 1023;                                // unbiased exponent
    const std::uint64_t m = d_man | (std::uint64_t{1} << 52);  // 53-bit significand
    const int emin = 1 - bias;                                 // smallest normal exponent

    // Quantum of the result: 2^(e - man_bits) for normals, 2^(emin - man_bits) for subnormals.
    int shift = 52 - man_bits + (e < emin ? emin - e : 0);
    if (shift > 60) shift = 60;  // value < 2^-7 quantum: rounds to zero either way
    std::uint64_t q = m >> shift;
    const std::uint64_t rem = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;

    if (e < emin) {
        // Subnormal (q == 2^man_bits encodes the smallest normal, which is correct).
        return sign | static_cast<std::uint32_t>(q);
    }
    int biased = e + bias;
    if (q == (std::uint64_t{1} << (man_bits + 1))) {  // rounding carried into the next binade
        q >>= 1;
        ++biased;
    }
    if (biased >= (1 << exp_bits) - 1) return sign | exp_all_ones;  // overflow -> Inf
    return sign | (static_cast<std::uint32_t>(biased) << man_bits) |
           (static_cast<std::uint32_t>(q) & ((1u << man_bits) - 1u));
}

}  // namespace

std::uint16_t double_to_f16(double d) { return static_cast<std::uint16_t>(round_double_to_format(d, 5, 10)); }
std::uint16_t double_to_bf16(double d) { return static_cast<std::uint16_t>(round_double_to_format(d, 8, 7)); }

// float -> double is exact, so rounding from the double is rounding from the float.
std::uint16_t float_to_f16(float f) { return double_to_f16(static_cast<double>(f)); }
std::uint16_t float_to_bf16(float f) { return double_to_bf16(static_cast<double>(f)); }

float f16_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu;
    std::uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) {
        // Inf, or NaN made quiet with its payload kept.
        return std::bit_cast<float>(sign | 0x7F800000u | (man ? (0x400000u | (man << 13)) : 0u));
    }
    if (exp == 0) {
        if (man == 0) return std::bit_cast<float>(sign);
        // Subnormal man * 2^-24: normalise into a float.
        std::uint32_t fexp = 127 - 14;
        while ((man & 0x400u) == 0) {
            man <<= 1;
            --fexp;
        }
        man &= 0x3FFu;
        return std::bit_cast<float>(sign | (fexp << 23) | (man << 13));
    }
    return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

float bf16_to_float(std::uint16_t h) {
    std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007F0000u)) bits |= 0x00400000u;  // quiet NaN
    return std::bit_cast<float>(bits);
}

}  // namespace kloop::check
