// kloop check: read and write elements of a typed host buffer as doubles.
//
// Responsibility: the single place that maps (dtype, base pointer, flat index) to a value, so
// generation and comparison treat every dtype alike. Loads are exact for every float dtype and
// for integers with |v| <= 2^53. Stores round into the dtype:
//   f32: IEEE round to nearest even; f16/bf16: check/half (round to nearest even, once);
//   i32/i64: round half away from zero, saturate to the type's range, NaN -> 0.
// The buffer is accessed with memcpy, so base needs no particular alignment.
//
// Two forms of the same conversions: load_element/store_element switch on a run-time dtype (one
// element at a time: tests, cu_seqlens, single values); element_codec<T> is the compile-time form
// for loops over millions of elements (no per-element dtype switch), reached from a run-time
// dtype once per loop with visit_dtype. load_element/store_element are implemented with the
// codecs, so both give the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "check/half.hpp"
#include "core/dtype.hpp"

namespace kloop::check {

namespace detail {

template <class I>
I double_to_integer(double v) {
    if (std::isnan(v)) return 0;
    const double r = std::round(v);  // exact (no libm rounding freedom)
    // Bounds as doubles: min is exact (-2^(bits-1)); max+1 is exact (2^(bits-1)).
    const double lo = static_cast<double>(std::numeric_limits<I>::min());
    const double hi_excl = -lo;
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi_excl) return std::numeric_limits<I>::max();
    return static_cast<I>(r);
}

}  // namespace detail

// storage: the element's in-memory type; encode: double -> storage (the rounding above);
// decode: storage -> double (exact).
template <kloop::dtype T>
struct element_codec;

template <>
struct element_codec<kloop::dtype::f32> {
    using storage = float;
    static storage encode(double v) { return static_cast<float>(v); }
    static double decode(storage s) { return static_cast<double>(s); }
};
template <>
struct element_codec<kloop::dtype::f64> {
    using storage = double;
    static storage encode(double v) { return v; }
    static double decode(storage s) { return s; }
};
template <>
struct element_codec<kloop::dtype::f16> {
    using storage = std::uint16_t;
    static storage encode(double v) { return double_to_f16(v); }
    static double decode(storage s) { return static_cast<double>(f16_to_float(s)); }
};
template <>
struct element_codec<kloop::dtype::bf16> {
    using storage = std::uint16_t;
    static storage encode(double v) { return double_to_bf16(v); }
    static double decode(storage s) { return static_cast<double>(bf16_to_float(s)); }
};
template <>
struct element_codec<kloop::dtype::i32> {
    using storage = std::int32_t;
    static storage encode(double v) { return detail::double_to_integer<std::int32_t>(v); }
    static double decode(storage s) { return static_cast<double>(s); }
};
template <>
struct element_codec<kloop::dtype::i64> {
    using storage = std::int64_t;
    static storage encode(double v) { return detail::double_to_integer<std::int64_t>(v); }
    static double decode(storage s) { return static_cast<double>(s); }
};

// Calls f(std::integral_constant<kloop::dtype, T>{}) for the run-time dtype t, so f can use
// element_codec<T> in its loops:
//   visit_dtype(t, [&](auto tag) { constexpr kloop::dtype T = decltype(tag)::value; … });
template <class F>
decltype(auto) visit_dtype(kloop::dtype t, F&& f) {
    using kloop::dtype;
    switch (t) {
        case dtype::f32: return f(std::integral_constant<dtype, dtype::f32>{});
        case dtype::f64: return f(std::integral_constant<dtype, dtype::f64>{});
        case dtype::f16: return f(std::integral_constant<dtype, dtype::f16>{});
        case dtype::bf16: return f(std::integral_constant<dtype, dtype::bf16>{});
        case dtype::i32: return f(std::integral_constant<dtype, dtype::i32>{});
        case dtype::i64: break;
    }
    return f(std::integral_constant<dtype, dtype::i64>{});
}

// Element i of a buffer of T's storage type (memcpy: no alignment needed).
template <kloop::dtype T>
typename element_codec<T>::storage load_raw(const void* base, std::int64_t i) {
    using S = typename element_codec<T>::storage;
    S v;
    std::memcpy(&v, static_cast<const unsigned char*>(base) + i * static_cast<std::int64_t>(sizeof(S)), sizeof(S));
    return v;
}

template <kloop::dtype T>
void store_raw(void* base, std::int64_t i, typename element_codec<T>::storage v) {
    using S = typename element_codec<T>::storage;
    std::memcpy(static_cast<unsigned char*>(base) + i * static_cast<std::int64_t>(sizeof(S)), &v, sizeof(S));
}

[[nodiscard]] double load_element(kloop::dtype t, const void* base, std::int64_t i);
void store_element(kloop::dtype t, void* base, std::int64_t i, double v);

// The value `v` becomes once stored into `t` (store then load, without a buffer).
[[nodiscard]] double round_to_dtype(kloop::dtype t, double v);

}  // namespace kloop::check
