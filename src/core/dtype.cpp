// kloop core: dtype names, sizes and ABI mapping.
#include "core/dtype.hpp"

#include "kloop/kernel.h"

namespace kloop {

std::string_view to_string(dtype t) {
    switch (t) {
        case dtype::f32: return "f32";
        case dtype::f16: return "f16";
        case dtype::bf16: return "bf16";
        case dtype::f64: return "f64";
        case dtype::i32: return "i32";
        case dtype::i64: return "i64";
    }
    return "?";
}

std::optional<dtype> dtype_from_string(std::string_view s) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64})
        if (to_string(t) == s) return t;
    return std::nullopt;
}

std::size_t size_bytes(dtype t) {
    switch (t) {
        case dtype::f16:
        case dtype::bf16: return 2;
        case dtype::f32:
        case dtype::i32: return 4;
        case dtype::f64:
        case dtype::i64: return 8;
    }
    return 0;
}

bool is_floating(dtype t) { return t != dtype::i32 && t != dtype::i64; }

int to_abi(dtype t) {
    switch (t) {
        case dtype::f32: return KL_F32;
        case dtype::f16: return KL_F16;
        case dtype::bf16: return KL_BF16;
        case dtype::f64: return KL_F64;
        case dtype::i32: return KL_I32;
        case dtype::i64: return KL_I64;
    }
    return -1;
}

}  // namespace kloop
