// kloop check: typed element load/store.
#include "check/element_access.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "check/half.hpp"

namespace kloop::check {

namespace {

template <class T>
T load_as(const void* base, std::int64_t i) {
    T v;
    std::memcpy(&v, static_cast<const unsigned char*>(base) + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return v;
}

template <class T>
void store_as(void* base, std::int64_t i, T v) {
    std::memcpy(static_cast<unsigned char*>(base) + i * static_cast<std::int64_t>(sizeof(T)), &v, sizeof(T));
}

template <class I>
I to_integer(double v) {
    if (std::isnan(v)) return 0;
    const double r = std::round(v);
    // Bounds as doubles: min is exact (-2^(bits-1)); max+1 is exact (2^(bits-1)).
    const double lo = static_cast<double>(std::numeric_limits<I>::min());
    const double hi_excl = -lo;
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi_excl) return std::numeric_limits<I>::max();
    return static_cast<I>(r);
}

}  // namespace

double load_element(kloop::dtype t, const void* base, std::int64_t i) {
    switch (t) {
        case dtype::f32: return static_cast<double>(load_as<float>(base, i));
        case dtype::f64: return load_as<double>(base, i);
        case dtype::f16: return static_cast<double>(f16_to_float(load_as<std::uint16_t>(base, i)));
        case dtype::bf16: return static_cast<double>(bf16_to_float(load_as<std::uint16_t>(base, i)));
        case dtype::i32: return static_cast<double>(load_as<std::int32_t>(base, i));
        case dtype::i64: return static_cast<double>(load_as<std::int64_t>(base, i));
    }
    return std::numeric_limits<double>::quiet_NaN();
}

void store_element(kloop::dtype t, void* base, std::int64_t i, double v) {
    switch (t) {
        case dtype::f32: store_as<float>(base, i, static_cast<float>(v)); return;
        case dtype::f64: store_as<double>(base, i, v); return;
        case dtype::f16: store_as<std::uint16_t>(base, i, double_to_f16(v)); return;
        case dtype::bf16: store_as<std::uint16_t>(base, i, double_to_bf16(v)); return;
        case dtype::i32: store_as<std::int32_t>(base, i, to_integer<std::int32_t>(v)); return;
        case dtype::i64: store_as<std::int64_t>(base, i, to_integer<std::int64_t>(v)); return;
    }
}

double round_to_dtype(kloop::dtype t, double v) {
    unsigned char buf[8];
    store_element(t, buf, 0, v);
    return load_element(t, buf, 0);
}

}  // namespace kloop::check
