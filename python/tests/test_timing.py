"""Unit under test: kloop_worker.timing.next_hold_s — how long the GPU stream is held while a
Python call is queued: long enough for the typical enqueue, not inflated by one slow one."""
import unittest

from kloop_worker.timing import HOLD_MAX_S, HOLD_MIN_S, next_hold_s


class NextHoldTest(unittest.TestCase):
    def test_twice_the_typical_enqueue_plus_a_margin(self):
        self.assertAlmostEqual(next_hold_s([40e-6, 50e-6, 60e-6]), 2 * 50e-6 + 20e-6)

    def test_one_jit_compile_does_not_inflate_the_next_holds(self):
        # The H200 case: the first warm-up call compiles (1.2 s), the rest queue in ~40 us.
        times = [1.2] + [40e-6] * 9
        self.assertLess(next_hold_s(times), 200e-6)

    def test_bounded_on_both_sides(self):
        self.assertEqual(next_hold_s([1e-7] * 5), HOLD_MIN_S)
        self.assertEqual(next_hold_s([2.0] * 5), HOLD_MAX_S)

    def test_a_default_before_any_call(self):
        self.assertAlmostEqual(next_hold_s([]), 200e-6)


if __name__ == "__main__":
    unittest.main()
