// kloop check: read and write one element of a typed host buffer as a double.
//
// Responsibility: the single place that maps (dtype, base pointer, flat index) to a value, so
// generation and comparison treat every dtype alike. Loads are exact for every float dtype and
// for integers with |v| <= 2^53. Stores round into the dtype:
//   f32: IEEE round to nearest even; f16/bf16: check/half (round to nearest even, once);
//   i32/i64: round half away from zero, saturate to the type's range, NaN -> 0.
// The buffer is accessed with memcpy, so base needs no particular alignment.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace kloop::check {

[[nodiscard]] double load_element(kloop::dtype t, const void* base, std::int64_t i);
void store_element(kloop::dtype t, void* base, std::int64_t i, double v);

// The value `v` becomes once stored into `t` (store then load, without a buffer).
[[nodiscard]] double round_to_dtype(kloop::dtype t, double v);

}  // namespace kloop::check
