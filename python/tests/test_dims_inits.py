"""Unit under test: kloop_worker.dims (dim expressions) and kloop_worker.inits (init forms)."""
import unittest

import numpy as np

from kloop_worker import dims, inits


class DimsTest(unittest.TestCase):
    def test_floor_division_and_remainder_like_python(self):
        self.assertEqual(dims.evaluate("-7/2", {}), -4)
        self.assertEqual(dims.evaluate("-7%2", {}), 1)
        self.assertEqual(dims.evaluate("ceil_div(T, 64) * 64", {"T": 100}), 128)
        self.assertEqual(dims.evaluate("min(N, 3) + max(N, 3)", {"N": 5}), 8)
        self.assertEqual(dims.evaluate("2*(N+1)", {"N": 5}), 12)

    def test_errors(self):
        for bad in ("N/0", "M", "2N", "(N", "foo(1)"):
            with self.assertRaises(ValueError, msg=bad):
                dims.evaluate(bad, {"N": 1})


class InitsTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(inits.parse("normal(0, 1)").kind, "normal")
        self.assertEqual(inits.parse("cu_seqlens(B*T)").total, "B*T")
        self.assertEqual(inits.parse("").kind, "normal")
        with self.assertRaises(ValueError):
            inits.parse("normal(1)")
        with self.assertRaises(ValueError):
            inits.parse("norml(0, 1)")

    def test_distributions(self):
        u = inits.generate(inits.parse("uniform(0.5, 1.5)"), 10000, False, {}, 1)
        self.assertTrue(((u >= 0.5) & (u < 1.5)).all())
        n = inits.generate(inits.parse("normal(3, 2)"), 100000, False, {}, 2)
        self.assertAlmostEqual(n.mean(), 3, delta=0.05)
        self.assertAlmostEqual(n.std(), 2, delta=0.05)
        r = inits.generate(inits.parse("randint(-2, 3)"), 1000, True, {}, 3)
        self.assertEqual(sorted(set(r.tolist())), [-2, -1, 0, 1, 2])
        ls = inits.generate(inits.parse("logsigmoid_normal(0, 1)"), 1000, False, {}, 4)
        self.assertTrue((ls < 0).all())
        a = inits.generate(inits.parse("arange(1, 0.5)"), 4, False, {}, 5)
        self.assertEqual(a.tolist(), [1.0, 1.5, 2.0, 2.5])

    def test_same_seed_same_values(self):
        a = inits.generate(inits.parse("normal(0, 1)"), 100, False, {}, 42)
        b = inits.generate(inits.parse("normal(0, 1)"), 100, False, {}, 42)
        self.assertTrue(np.array_equal(a, b))

    def test_cu_seqlens_rules(self):
        c = inits.generate(inits.parse("cu_seqlens(T)"), 5, True, {"T": 4}, 1)
        self.assertEqual(c.tolist(), [0, 1, 2, 3, 4])
        with self.assertRaises(ValueError):
            inits.generate(inits.parse("cu_seqlens(T)"), 6, True, {"T": 4}, 1)

    def test_spike_one_dominant_value_per_row(self):
        init = inits.parse("spike(1, 1e4, D)")
        self.assertEqual((init.kind, init.a, init.b, init.total), ("spike", 1.0, 1e4, "D"))
        v = inits.generate(init, 7 * 50 + 13, False, {"D": 50}, 9)  # 7 full rows and a partial one
        rows = [v[i:i + 50] for i in range(0, v.size, 50)]
        for r in rows[:7]:
            big = np.abs(r) == 1e4
            self.assertEqual(int(big.sum()), 1)
            self.assertTrue((np.abs(r[~big]) < 10).all())
        self.assertLessEqual(int((np.abs(rows[7]) == 1e4).sum()), 1)
        signs = {float(np.sign(x)) for x in v if abs(x) == 1e4}
        self.assertEqual(signs, {-1.0, 1.0})
        self.assertTrue(np.array_equal(v, inits.generate(init, v.size, False, {"D": 50}, 9)))
        self.assertFalse(np.array_equal(v, inits.generate(init, v.size, False, {"D": 50}, 10)))

    def test_spike_row_is_a_dim_expression_with_commas(self):
        init = inits.parse("spike(2, -3, min(D, 4))")
        self.assertEqual(init.total, "min(D, 4)")
        v = inits.generate(init, 8, False, {"D": 100}, 1)
        self.assertEqual(int((v == -3).sum() + (v == 3).sum()), 2)
        with self.assertRaises(ValueError):
            inits.generate(inits.parse("spike(1, 5, D-4)"), 8, False, {"D": 4}, 1)

    def test_int_edges_draws_only_the_edges(self):
        self.assertEqual(inits.int_edge_values(-128, 127), [-128, -127, -1, 0, 1, 126, 127])
        self.assertEqual(inits.int_edge_values(0, 1), [0, 1])
        self.assertEqual(inits.int_edge_values(5, 5), [5])
        v = inits.generate(inits.parse("int_edges(-2147483648, 2147483647)"), 5000, True, {}, 3)
        self.assertEqual(v.dtype, np.int64)
        self.assertEqual(sorted(set(v.tolist())), [-2147483648, -2147483647, -1, 0, 1, 2147483646, 2147483647])
        with self.assertRaises(ValueError):
            inits.generate(inits.parse("int_edges(3, 2)"), 4, True, {}, 1)

    def test_to_integer_rounds_half_away_and_saturates(self):
        v = inits.to_integer(np.array([0.5, -0.5, 1.49, np.nan, 1e30, -1e30]), 32)
        self.assertEqual(v.tolist(), [1, -1, 1, 0, 2 ** 31 - 1, -(2 ** 31)])
        v = inits.to_integer(np.array([1e300, -1e300]), 64)
        self.assertEqual(v.tolist(), [2 ** 63 - 1, -(2 ** 63)])


if __name__ == "__main__":
    unittest.main()
