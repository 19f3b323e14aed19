"""Unit under test: kloop_worker.check_draw (which timed samples are checked, full or partial)
and kloop_worker.scattered_draws with CallBuffers.change_scattered / restore_inputs / intact
(the partial change, the per-call preparation and the after-call verification)."""
import unittest

import numpy as np

from kloop_worker import inits, scattered_draws
from kloop_worker.check_draw import CheckDraw
from kloop_worker.protocol import CallPlan, TensorPlan, Tolerance
from kloop_worker.tensors import CallBuffers, NumpyBackend


def plan():
    return CallPlan(
        mode="fwd", shape="s", entry="f", reference_entry="f_ref", dims={"N": 64, "D": 256},
        inputs=[
            TensorPlan("x", "f32", [64, 256], "normal(0, 1)"),
            TensorPlan("w", "f32", [256], "uniform(0.5, 1.5)"),
            TensorPlan("c", "i32", [5], "cu_seqlens(N)"),
            TensorPlan("k", "i64", [300], "randint(0, 1000)"),
        ],
        outputs=[TensorPlan("y", "f32", [64, 256], tol=Tolerance(atol=0.0))],
        params=[],
    )


class CheckDrawTest(unittest.TestCase):
    def test_rate_is_one_in_check_every_at_first(self):
        # check_every 8, tail_checks 10**6: the first 8 million samples are drawn at 1 / 8.
        d = CheckDraw(7, 8, 10**6)
        hits = sum(d.draw(s) for s in range(20000))
        self.assertGreater(hits, 2500 * 0.85)
        self.assertLess(hits, 2500 * 1.15)

    def test_same_seed_same_draws_other_seed_other_draws(self):
        d1, d2, d3 = CheckDraw(7, 4, 99), CheckDraw(7, 4, 99), CheckDraw(8, 4, 99)
        s1 = [d1.draw(s) for s in range(200)]
        self.assertEqual(s1, [d2.draw(s) for s in range(200)])
        self.assertNotEqual(s1, [d3.draw(s) for s in range(200)])

    def test_not_a_schedule_gaps_vary(self):
        d = CheckDraw(3, 8, 10**6)
        hits = [i for i in range(4000) if d.draw(i)]
        gaps = set(np.diff(hits).tolist())
        self.assertGreater(len(gaps), 10)  # a fixed period or a geometric schedule has few gap values

    def test_checks_thin_out_but_reach_the_end_of_a_long_run(self):
        # The defaults (check_every 8, tail_checks 4) over 600 samples: about 4 + 4 ln(600/32)
        # checks in all, and some in the last three quarters in almost every run — a candidate
        # that cheats only after its 150th call meets checks, not a spent cap.
        totals, late = [], 0
        for seed in range(400):
            d = CheckDraw(seed, 8, 4)
            hits = [s for s in range(600) if d.draw(s)]
            totals.append(len(hits))
            late += any(s >= 150 for s in hits)
        self.assertGreater(np.mean(totals), 12)
        self.assertLess(np.mean(totals), 20)
        self.assertGreaterEqual(late, 390)  # P(none in [150, 600)) = (150/600)^4 = 0.4 %
        self.assertAlmostEqual(CheckDraw(1, 8, 4).probability(31), 1 / 8)
        self.assertAlmostEqual(CheckDraw(1, 8, 4).probability(399), 4 / 400)

    def test_off(self):
        off = CheckDraw(3, 0, 5)
        self.assertFalse(off.enabled)
        self.assertFalse(any(off.draw(s) for s in range(100)))


class ScatteredDrawsTest(unittest.TestCase):
    def test_positions_are_distinct_and_spread_over_all_tensors(self):
        counts = np.zeros(2)
        for seed in range(400):
            p = scattered_draws.draw_positions([16384, 256], seed)
            self.assertEqual(sum(v.size for v in p.values()), 16)
            for i, v in p.items():
                self.assertEqual(len(set(v.tolist())), v.size)
                counts[i] += v.size
        share = counts[1] / counts.sum()
        self.assertGreater(share, 256 / 16640 * 0.5)
        self.assertLess(share, 256 / 16640 * 2.0)

    def test_small_tensors_change_every_element(self):
        p = scattered_draws.draw_positions([3, 2], 5)
        self.assertEqual(sorted(p[0].tolist()), [0, 1, 2])
        self.assertEqual(sorted(p[1].tolist()), [0, 1])

    def test_structured_forms_have_no_fresh_values(self):
        with self.assertRaises(ValueError):
            scattered_draws.fresh_values(inits.parse("arange(0, 1)"), 4, False, {}, 1)


class PartialChangeTest(unittest.TestCase):
    def test_a_few_elements_of_iid_inputs_change_structured_ones_do_not(self):
        b = CallBuffers(plan(), NumpyBackend())
        b.fill_inputs(1)
        before = [x.view.copy() for x in b.inputs]
        self.assertEqual(b.change_scattered(99), 16)
        changed = [int(np.count_nonzero(x.view != old)) for x, old in zip(b.inputs, before)]
        self.assertTrue(1 <= sum(changed) <= 16, changed)
        self.assertEqual(changed[2], 0)  # cu_seqlens kept
        self.assertGreater(changed[0], 0)
        # The pristine copies follow only when the call is prepared.
        self.assertFalse(b.intact())
        b.prepare_call()
        self.assertTrue(b.intact())

    def test_fresh_values_come_from_the_initialiser(self):
        b = CallBuffers(plan(), NumpyBackend())
        b.fill_inputs(1)
        for seed in range(20):
            b.change_scattered(seed)
        w = b.inputs[1].view
        self.assertTrue(((w >= 0.5) & (w < 1.5)).all())
        k = b.inputs[3].view
        self.assertTrue(((k >= 0) & (k < 1000)).all())

    def test_prepare_restores_inputs_and_poisons_and_intact_sees_damage(self):
        b = CallBuffers(plan(), NumpyBackend())
        b.fill_inputs(2)
        b.prepare_call()
        b.outputs[0].view[...] = 1.0
        b.inputs[0].view[3, 4] += 1.0
        self.assertFalse(b.intact())
        self.assertEqual(b.find_changed_inputs(), [{"name": "x", "first_changed": 3 * 256 + 4}])
        b.restore_inputs()
        b.prepare_call()
        self.assertTrue(b.intact())
        self.assertTrue(np.isnan(b.outputs[0].view).all())
        b.outputs[0].block[b.outputs[0].front + b.outputs[0].nbytes + 7] = 0
        self.assertFalse(b.intact())
        self.assertEqual(b.find_red_zone_violations(), [{"name": "y", "byte_offset": 64 * 256 * 4 + 7}])
        b.prepare_call()
        self.assertTrue(b.intact())


if __name__ == "__main__":
    unittest.main()
