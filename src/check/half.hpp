// kloop check: IEEE binary16 (f16) and bfloat16 (bf16) conversions on the host.
//
// Responsibility: exact, portable conversion between float/double and the two 16-bit float
// formats, by bit manipulation (no compiler _Float16/__bf16, no CUDA headers), so generated
// inputs and compared outputs agree bit for bit with what a GPU stores.
//   - to 16 bits: round to nearest, ties to even; overflow -> +-Inf (f16: |x| >= 65520);
//     results below the normal range become subnormals (f16: multiples of 2^-24, bf16: 2^-133)
//     or signed zero; NaN stays a quiet NaN with the sign and the top payload bits kept.
//   - from 16 bits: exact (every f16 and bf16 value is a float).
// The double_to_* variants round once from double: going double -> float -> f16 can round twice
// and differ from the correctly rounded result in rare ties.
#pragma once

#include <cstdint>

namespace kloop::check {

[[nodiscard]] std::uint16_t float_to_f16(float f);
[[nodiscard]] float f16_to_float(std::uint16_t h);
[[nodiscard]] std::uint16_t float_to_bf16(float f);
[[nodiscard]] float bf16_to_float(std::uint16_t h);

[[nodiscard]] std::uint16_t double_to_f16(double d);
[[nodiscard]] std::uint16_t double_to_bf16(double d);

// Canonical quiet NaNs (what poisoning writes).
inline constexpr std::uint16_t f16_quiet_nan = 0x7E00;
inline constexpr std::uint16_t bf16_quiet_nan = 0x7FC0;

}  // namespace kloop::check
