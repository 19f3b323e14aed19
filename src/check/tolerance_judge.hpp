// kloop check: the pass/fail verdict on one output, with a reason a person can act on.
//
// Responsibility: apply a spec tolerance to compare_metrics (check/comparison). Rules, in the
// order their reasons are listed (failing rules contribute, joined by "; "; rules 2 and 3 are
// reported only when the rules before them are not, since mismatches counts every cause):
//   1. any NaN/Inf in the output fails:     "12 NaN, 0 Inf in output (first at [0, 5])"
//   2. a non-finite reference value the output does not reproduce fails:
//                                           "reference has 3 non-finite values (first mismatch at [7])"
//   3. atol/rtol given: any element with |out - ref| > atol + rtol*|ref| fails:
//        "1024 of 262144 elements beyond atol=1e-05 rtol=1e-05 (first at [3, 17]; max_abs 0.31)"
//   4. rel_rms given: rel_rms > bound fails: "rel_rms 2.10e-03 > 1.00e-04"
//   5. a tolerance with no bound at all fails ("tolerance gives no bound"): the spec loader
//      rejects it, and a verdict without a bound would be meaningless.
// A pass reason summarises the margins: "max_abs 3.1e-06, max_rel 2.0e-05, rel_rms 1.2e-06
// within atol=1e-05 rtol=1e-05" (bounds listed as given).
// Indices are printed as multi-dimensional row-major positions in `shape`; when `shape` does not
// describe m.n elements, as a flat index "[123]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/comparison.hpp"
#include "spec/op_spec.hpp"

namespace kloop::check {

struct judgement {
    bool pass = false;
    std::string reason;
};

[[nodiscard]] judgement judge(const compare_metrics& m, const spec::tolerance& tol,
                              const std::vector<std::int64_t>& shape);

// Row-major position of flat index `flat` in `shape` (empty shape: a scalar, flat must be 0).
// Throws std::out_of_range when flat is outside [0, product(shape)).
[[nodiscard]] std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape);

// "[3, 17]"; "[]" for a scalar.
[[nodiscard]] std::string format_index(const std::vector<std::int64_t>& index);

}  // namespace kloop::check
