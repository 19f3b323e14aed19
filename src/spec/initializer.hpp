// kloop spec: how an input tensor is filled ("normal(0, 1)", "cu_seqlens(T)", ...).
//
// Responsibility: the parsed form of an `init` string. Generation itself is in
// check/input_generator. Forms:
//   normal(mean, std)            uniform(lo, hi)           randint(lo, hi)   (hi exclusive)
//   const(v)                     logsigmoid_normal(mean, std)   (log(sigmoid(x)), x ~ normal: decays)
//   cu_seqlens(total)            a 1-d i32/i64 tensor of n+1 offsets, 0 = first < ... < last = total,
//                                where n+1 is the tensor's length and `total` a dim expression
//   arange(start, step)          start + i*step, row-major index i
//   spike(std, peak, row)        normal(0, std) with, in every run of `row` consecutive elements
//                                (a row; `row` a dim expression), one element at a random
//                                position set to +peak or -peak: one dominant value per row
//   int_edges(lo, hi)            integers drawn uniformly from the edge values of [lo, hi]
//                                (inclusive): lo, lo+1, -1, 0, 1, hi-1, hi, those inside it
// Rules checked by parse: numbers are finite decimals (1e-6, -0.5, +2); std > 0; lo < hi;
// randint and int_edges bounds are integers (|v| <= 2^53), int_edges lo <= hi; spike std > 0. Which dtype/shape a form needs is checked by the
// loader (cu_seqlens: integer dtype, 1-d).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "spec/dim_expr.hpp"

namespace kloop::spec {

enum class init_kind { normal, uniform, randint, constant, logsigmoid_normal, cu_seqlens, arange, spike, int_edges };

struct initializer {
    init_kind kind = init_kind::normal;
    double a = 0.0;        // mean / lo / value / start / spike: std
    double b = 1.0;        // std / hi / step / spike: peak
    dim_expr total;        // cu_seqlens: the total; spike: the row length
    std::string text;      // as written, for messages and records

    // Throws std::invalid_argument naming what is wrong.
    static initializer parse(const std::string& text);
};

// The spelling in op.toml: "normal", "uniform", "randint", "const", "logsigmoid_normal",
// "cu_seqlens", "arange", "spike", "int_edges".
[[nodiscard]] std::string to_string(init_kind k);
[[nodiscard]] std::optional<init_kind> init_kind_from_string(std::string_view s);

}  // namespace kloop::spec
