"""Writes tests/data/comparison_cases.json: outputs, references, tolerances and the comparison
metrics of each (docs/correctness.md, "Comparison and tolerances"). The expected metrics are
computed here, element by element from the definitions, independently of both implementations:
the C++ comparison (src/check/comparison.cpp, tests/unit/check/comparison_vectors_test.cpp) and
the Python worker's twin (python/kloop_worker/metrics.py, python/tests/test_comparison_vectors.py)
must both reproduce every value (counts and maxima exactly, rel_rms to 1e-12 relative: the C++
side sums with Neumaier's compensation, the Python side in float64).

    python3 tests/data/make_comparison_cases.py
"""
import json
import math
import os
import struct


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0] if math.isfinite(x) else x


def enc(x):
    if isinstance(x, int):
        return x
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def metrics(dtype, out, ref, tol):
    integer = dtype in ("i32", "i64")
    n = len(out)
    m = {"n": n, "max_abs": 0.0, "max_rel": 0.0, "mismatches": 0, "first_bad": -1, "nan_count": 0, "inf_count": 0,
         "first_nonfinite": -1, "ref_nonfinite": 0}
    d2, r2 = [], []
    elementwise = "atol" in tol or "rtol" in tol
    atol, rtol = tol.get("atol", 0.0), tol.get("rtol", 0.0)
    for i, (o, r) in enumerate(zip(out, ref)):
        o_fin = integer or math.isfinite(o)
        r_fin = integer or math.isfinite(r)
        if not integer and math.isnan(o):
            m["nan_count"] += 1
        if not integer and math.isinf(o):
            m["inf_count"] += 1
        if not o_fin and m["first_nonfinite"] < 0:
            m["first_nonfinite"] = i
        if not r_fin:
            m["ref_nonfinite"] += 1
        both = o_fin and r_fin
        diff = float(abs(o - r)) if both else 0.0  # integers: exact, then one rounding
        ar = abs(float(r)) if both else 0.0
        m["max_abs"] = max(m["max_abs"], diff)
        if both and ar != 0.0:
            m["max_rel"] = max(m["max_rel"], diff / ar)
        d2.append(diff * diff)
        if both:
            r2.append(float(r) * float(r))
        same_nonfinite = (math.isnan(o) if math.isnan(r) else o == r) if not r_fin else True
        bad = (not r_fin and not same_nonfinite) or (r_fin and not o_fin)
        if elementwise and both and diff > atol + rtol * ar:
            bad = True
        if bad:
            m["mismatches"] += 1
            if m["first_bad"] < 0:
                m["first_bad"] = i
    sd2, sr2 = math.fsum(d2), math.fsum(r2)
    if sr2 == 0.0:
        m["rel_rms"] = 0.0 if sd2 == 0.0 else math.inf
    else:
        m["rel_rms"] = math.sqrt(sd2 / sr2)
    return {k: enc(v) for k, v in m.items()}


def main():
    nan, inf = math.nan, math.inf
    specs = [
        ("identical outputs", "f32", [1.0, 2.0, -3.0], [1.0, 2.0, -3.0], {"atol": 0.0, "rtol": 0.0}),
        ("the elementwise bound is inclusive; the first bad index is reported", "f64",
         [1.0, 2.5, 4.0, 10.0], [1.0, 2.0, 4.0, 8.0], {"atol": 0.5, "rtol": 0.0}),
        ("atol + rtol |r|, zeros in the reference skip max_rel", "f32",
         [0.0, 0.001, 100.5, -50.25, 7.0], [0.0, 0.0, 100.0, -50.0, 7.0], {"atol": 1e-3, "rtol": 4e-3}),
        ("NaN poison left in an output is counted and fails", "f32",
         [1.0, nan, 3.0, nan], [1.0, 2.0, 3.0, 4.0], {"rel_rms": 1e-3}),
        ("an infinite output against a finite reference", "f64",
         [1.0, -inf, 3.0], [1.0, 2.0, 3.0], {"atol": 1.0}),
        ("a zero reference: rel_rms is infinite unless the output is exact too", "f32",
         [0.0, 1e-3], [0.0, 0.0], {"rel_rms": 1e-3}),
        ("a zero reference matched exactly", "f32", [0.0, 0.0], [0.0, 0.0], {"rel_rms": 1e-3}),
        ("non-finite reference values must be reproduced: NaN by NaN, inf by the same inf", "f64",
         [nan, inf, -inf, 1.0, 5.0], [nan, inf, inf, nan, 5.0], {"atol": 0.0}),
        ("rel_rms over many values (sums in the two implementations' ways)", "f64",
         [math.sin(0.37 * k) + 1e-7 * k for k in range(257)], [math.sin(0.37 * k) for k in range(257)],
         {"rel_rms": 1e-5}),
        ("32-bit integers exactly", "i32", [7, -2147483648, 2147483647, 0], [7, 2147483647, -2147483648, 1],
         {"atol": 0.0}),
        ("64-bit integers: the difference is taken exactly, then rounded once", "i64",
         [9007199254740993, -4611686018427387904, 12], [1, 4611686018427387904, 12], {"atol": 0.0}),
        ("an empty output", "f32", [], [], {"atol": 0.0}),
    ]
    cases = []
    for why, dtype, out, ref, tol in specs:
        if dtype == "f32":
            out = [f32(x) for x in out]
            ref = [f32(x) for x in ref]
        cases.append({"why": why, "dtype": dtype, "out": [enc(x) for x in out], "ref": [enc(x) for x in ref],
                      "tolerance": tol, "expected": metrics(dtype, out, ref, tol)})
    path = os.path.join(os.path.dirname(__file__), "comparison_cases.json")
    with open(path, "w") as f:
        json.dump({"schema_version": 1, "generator": "tests/data/make_comparison_cases.py", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
