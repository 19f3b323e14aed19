"""Unit under test: kloop_worker.metrics — the twin of check::compare_outputs (same fields, same
definitions) on numpy buffers."""
import math
import unittest

import numpy as np

from kloop_worker.metrics import compare
from kloop_worker.protocol import TensorPlan, Tolerance
from kloop_worker.tensors import GuardedBuffer, NumpyBackend


def buffers(dtype, out, ref):
    b = NumpyBackend()
    o = GuardedBuffer(b, TensorPlan("y", dtype, [len(out)]))
    r = GuardedBuffer(b, TensorPlan("y", dtype, [len(ref)]))
    o.view[...] = out
    r.view[...] = ref
    return o, r


class MetricsTest(unittest.TestCase):
    def test_identical_outputs(self):
        o, r = buffers("f32", [1.0, 2.0, -3.0], [1.0, 2.0, -3.0])
        m = compare(o, r, Tolerance(atol=0.0, rtol=0.0))
        self.assertEqual(m["mismatches"], 0)
        self.assertEqual(m["first_bad"], -1)
        self.assertEqual(m["max_abs"], 0.0)
        self.assertEqual(m["rel_rms"], 0.0)
        self.assertEqual(m["n"], 3)

    def test_elementwise_bound_is_inclusive_and_first_bad_is_reported(self):
        o, r = buffers("f64", [1.0, 2.5, 4.0, 10.0], [1.0, 2.0, 4.0, 8.0])
        m = compare(o, r, Tolerance(atol=0.5, rtol=0.0))
        self.assertEqual(m["mismatches"], 1)  # |2.5-2| = 0.5 passes; |10-8| = 2 fails
        self.assertEqual(m["first_bad"], 3)
        self.assertEqual(m["max_abs"], 2.0)
        self.assertAlmostEqual(m["max_rel"], 0.25)
        self.assertAlmostEqual(m["rel_rms"], math.sqrt((0.25 + 4.0) / (1 + 4 + 16 + 64)))

    def test_nan_poison_is_counted(self):
        o, r = buffers("f32", [1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
        o.poison()
        o.view[0] = 1.0
        m = compare(o, r, Tolerance(rel_rms=1e-3))
        self.assertEqual(m["nan_count"], 2)
        self.assertEqual(m["first_nonfinite"], 1)
        self.assertEqual(m["mismatches"], 2)
        self.assertEqual(m["first_bad"], 1)

    def test_zero_reference_gives_infinite_rel_rms_unless_exact(self):
        o, r = buffers("f32", [0.0, 1e-3], [0.0, 0.0])
        self.assertEqual(compare(o, r, Tolerance(rel_rms=1e-3))["rel_rms"], "inf")
        o, r = buffers("f32", [0.0, 0.0], [0.0, 0.0])
        self.assertEqual(compare(o, r, Tolerance(rel_rms=1e-3))["rel_rms"], 0.0)

    def test_reference_non_finite_must_be_reproduced(self):
        o, r = buffers("f32", [np.inf, 1.0], [np.inf, np.nan])
        m = compare(o, r, Tolerance(atol=0.0))
        self.assertEqual(m["ref_nonfinite"], 2)
        self.assertEqual(m["mismatches"], 1)  # inf matches inf; 1.0 is not NaN
        self.assertEqual(m["first_bad"], 1)

    def test_integers_exactly(self):
        o, r = buffers("i64", [2 ** 62, -5], [-(2 ** 62), -5])
        m = compare(o, r, Tolerance(atol=0.0))
        self.assertEqual(m["mismatches"], 1)
        self.assertEqual(m["max_abs"], float(2 ** 63))

    def test_bf16_and_f16_decode_exactly(self):
        b = NumpyBackend()
        for dtype in ("f16",):
            o = GuardedBuffer(b, TensorPlan("y", dtype, [2]))
            r = GuardedBuffer(b, TensorPlan("y", dtype, [2]))
            o.store(np.array([1.0, 0.5]))
            r.store(np.array([1.0, 0.25]))
            m = compare(o, r, Tolerance(atol=0.0))
            self.assertEqual(m["max_abs"], 0.25)


if __name__ == "__main__":
    unittest.main()
