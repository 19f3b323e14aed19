"""Units under test: kloop_worker.timing.next_hold_s — how long the GPU stream is held while a
Python call is queued: long enough for the typical enqueue, not inflated by one slow one — and
the hold a checker names for a candidate host (remote_side.CandidateHostLink.timed_request):
bounded, and credited to the window exactly."""
import unittest

from kloop_worker import remote_side
from kloop_worker.timing import HOLD_CREDIT_MAX_S, HOLD_MAX_S, HOLD_MIN_S, next_hold_s


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


class _Allocator:
    def __init__(self, cuda):
        self.is_cuda = cuda


class CheckerNamedHoldTest(unittest.TestCase):
    def link(self, cuda, enqueue_claim, window_s=0.01):
        link = remote_side.CandidateHostLink(0)
        link.allocator = _Allocator(cuda)
        sent = []

        def exchange(req, fds=None):
            sent.append(req)
            return {"ok": True, "info": {"enqueue_s": enqueue_claim}}, window_s

        link._exchange = exchange
        return link, sent

    def test_the_named_hold_is_sent_and_taken_off_the_window(self):
        link, sent = self.link(True, 100e-6)
        _, window = link.timed_request({"op": "time", "call": 0, "set": 1})
        self.assertAlmostEqual(sent[0]["hold_s"], next_hold_s([]))
        self.assertAlmostEqual(window, 0.01 - next_hold_s([]))
        # The next hold follows the host's reported enqueue time.
        _, window = link.timed_request({"op": "time", "call": 0, "set": 1})
        self.assertAlmostEqual(sent[1]["hold_s"], 2 * 100e-6 + 20e-6)
        self.assertAlmostEqual(window, 0.01 - (2 * 100e-6 + 20e-6))

    def test_a_host_claiming_slow_enqueues_gets_no_more_credit_than_the_cap(self):
        link, sent = self.link(True, 0.5)
        for _ in range(5):
            _, window = link.timed_request({"op": "time", "call": 0, "set": 1})
        self.assertEqual(sent[-1]["hold_s"], HOLD_CREDIT_MAX_S)
        self.assertAlmostEqual(window, 0.01 - HOLD_CREDIT_MAX_S)
        self.assertLess(HOLD_CREDIT_MAX_S, HOLD_MAX_S)

    def test_nonsense_claims_are_ignored(self):
        for claim in (float("nan"), "fast", True, None, -1.0):
            link, sent = self.link(True, claim)
            link.timed_request({"op": "time", "call": 0, "set": 1})
            link.timed_request({"op": "time", "call": 0, "set": 1})
            self.assertLessEqual(sent[-1]["hold_s"], next_hold_s([]), claim)

    def test_no_hold_without_a_gpu(self):
        link, sent = self.link(False, 100e-6)
        _, window = link.timed_request({"op": "time", "call": 0, "set": 1})
        self.assertNotIn("hold_s", sent[0])
        self.assertEqual(window, 0.01)


if __name__ == "__main__":
    unittest.main()
