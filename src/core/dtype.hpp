// kloop core: element types of tensors in an op spec.
//
// Responsibility: the closed set of dtypes kloop understands, their names in op.toml and their
// sizes, and the mapping to the C ABI's kl_dtype. No I/O, no CUDA.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kloop {

enum class dtype { f32, f16, bf16, f64, i32, i64 };

[[nodiscard]] std::string_view to_string(dtype t);
// Accepts the op.toml spellings: f32 f16 bf16 f64 i32 i64.
[[nodiscard]] std::optional<dtype> dtype_from_string(std::string_view s);
[[nodiscard]] std::size_t size_bytes(dtype t);
[[nodiscard]] bool is_floating(dtype t);
// The kl_dtype enumerator value (see include/kloop/kernel.h).
[[nodiscard]] int to_abi(dtype t);

}  // namespace kloop
