"""Unit under test: kloop_worker.metrics against the shared vectors tests/data/comparison_cases.json
(tests/data/make_comparison_cases.py computes them from the definitions). The C++ comparison
(src/check/comparison.cpp) must reproduce the same file (tests/unit/check/comparison_vectors_test.cpp)."""
import json
import math
import os
import unittest

from kloop_worker.metrics import compare
from kloop_worker.protocol import TensorPlan, Tolerance
from kloop_worker.tensors import GuardedBuffer, NumpyBackend

CASES = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "comparison_cases.json")


def decode(v):
    return float(v) if isinstance(v, str) else v


def buffer(dtype, values):
    b = GuardedBuffer(NumpyBackend(), TensorPlan("y", dtype, [len(values)]))
    if values:
        b.view[...] = [decode(v) for v in values]
    return b


class ComparisonVectorsTest(unittest.TestCase):
    def test_every_shared_case_is_reproduced(self):
        with open(CASES) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 10)
        for c in cases:
            with self.subTest(c["why"]):
                t = c["tolerance"]
                tol = Tolerance(atol=t.get("atol"), rtol=t.get("rtol"), rel_rms=t.get("rel_rms"))
                m = compare(buffer(c["dtype"], c["out"]), buffer(c["dtype"], c["ref"]), tol)
                e = c["expected"]
                for key in ("n", "mismatches", "first_bad", "nan_count", "inf_count", "first_nonfinite",
                            "ref_nonfinite", "max_abs", "max_rel"):
                    self.assertEqual(m[key], e[key], key)
                got, want = decode(m["rel_rms"]), decode(e["rel_rms"])
                if math.isfinite(want) and want != 0.0:
                    self.assertAlmostEqual(got, want, delta=1e-12 * want)
                else:
                    self.assertEqual(got, want)


if __name__ == "__main__":
    unittest.main()
