// kloop check: compare a candidate's output with the reference's, element by element.
//
// Responsibility: the numbers a tolerance verdict is made from (check/tolerance_judge decides).
// Everything is computed in double after loading each element exactly (check/element_access).
// Definitions, for the n elements o_i (output) and r_i (reference):
//   nan_count, inf_count   NaN / +-Inf values in the output
//   ref_nonfinite          NaN / +-Inf values in the reference (a broken reference, not the
//                          candidate's fault, but no verdict can be made on those elements)
//   finite pairs           elements where both o_i and r_i are finite
//   max_abs                max |o_i - r_i| over finite pairs
//   max_rel                max |o_i - r_i| / |r_i| over finite pairs with r_i != 0
//   rel_rms                sqrt(sum (o_i - r_i)^2 / sum r_i^2) over finite pairs, i.e.
//                          rms(diff) / rms(ref); 0 when both sums are 0, +inf when only the
//                          reference's is 0
//   mismatches             elements where o_i is non-finite while r_i is finite; or r_i is
//                          non-finite and o_i is not the same value (same signed Inf, or NaN
//                          for NaN); or, when tol has atol or rtol (a missing one counts as 0),
//                          |o_i - r_i| > atol + rtol * |r_i| on a finite pair
//   first_bad              flat index of the first mismatch, -1 when none
//   first_nonfinite        flat index of the first NaN/Inf in the output, -1 when none
// Integer dtypes: the difference is taken exactly in integers before conversion to double.
// Sums use Neumaier compensation. rel_rms ignores tol (it is always computed).
//
// Parallel and exact: the elements are cut into chunks of k_chunk_elems (core/thread_pool.hpp),
// compared on a thread_pool; the per-chunk results are combined in chunk order — counts added,
// maxima taken, first_bad / first_nonfinite the first chunk's that has one (the global minimum),
// each chunk's compensated sums added compensated. Every field is therefore the same bits for
// every thread count (the sums depend on the chunking, which depends on n only).
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.hpp"
#include "spec/op_spec.hpp"

namespace kloop {
class thread_pool;
}

namespace kloop::check {

struct compare_metrics {
    std::int64_t n = 0;
    double max_abs = 0;
    double max_rel = 0;
    double rel_rms = 0;
    std::int64_t mismatches = 0;
    std::int64_t first_bad = -1;
    std::int64_t nan_count = 0;
    std::int64_t inf_count = 0;
    // additions
    std::int64_t first_nonfinite = -1;
    std::int64_t ref_nonfinite = 0;

    bool operator==(const compare_metrics&) const = default;
};

// On thread_pool::shared().
[[nodiscard]] compare_metrics compare_outputs(kloop::dtype t, const void* out, const void* ref, std::int64_t n,
                                              const spec::tolerance& tol);
// On `pool` (same result whatever its thread count).
[[nodiscard]] compare_metrics compare_outputs(kloop::dtype t, const void* out, const void* ref, std::int64_t n,
                                              const spec::tolerance& tol, thread_pool& pool);

// JSON: an object with the field names above. Non-finite doubles are written as the strings
// "inf", "-inf" and "nan" (JSON has no such numbers and null would lose which one it was).
// from_json accepts numbers or those strings; fields added later may be absent (defaults).
void to_json(nlohmann::json& j, const compare_metrics& m);
void from_json(const nlohmann::json& j, compare_metrics& m);

}  // namespace kloop::check
