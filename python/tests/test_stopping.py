"""Unit under test: kloop_worker.stopping — the port of measure::stopping_rule."""
import random
import unittest

from kloop_worker.stopping import StoppingRule

STOP = {"min_samples": 10, "min_time_s": 0.5, "target_rel_stdev": 0.005, "max_time_s": 15.0, "max_samples": 100000}


class StoppingRuleTest(unittest.TestCase):
    def test_converges_on_steady_samples_once_the_minima_are_met(self):
        r = StoppingRule(STOP)
        n = 0
        while not r.done:
            r.add(0.1)
            n += 1
        self.assertEqual(r.state, "converged")
        self.assertEqual(n, 10)  # 10 samples and 1.0 s >= 0.5 s

    def test_minimum_time_holds_it_back(self):
        r = StoppingRule(STOP)
        for _ in range(10):
            r.add(0.01)
        self.assertFalse(r.done)  # 0.1 s < 0.5 s

    def test_time_budgets_count_each_samples_cost(self):
        # As the C++ rule: a 10 us sample that cost 1 ms to take counts 1 ms of measurement time.
        r = StoppingRule(STOP)
        n = 0
        while not r.done:
            r.add(10e-6, 1e-3)
            n += 1
            self.assertLessEqual(n, 1000)
        self.assertEqual(r.state, "converged")
        self.assertEqual(n, 500)
        low = StoppingRule(STOP)
        low.add(0.25, 0.1)  # a cost below the sample counts the sample
        self.assertAlmostEqual(low.total_s, 0.25)

    def test_time_cap_stops_even_before_the_minima(self):
        r = StoppingRule(STOP)
        r.add(20.0)
        self.assertEqual(r.state, "time_cap")

    def test_sample_cap(self):
        r = StoppingRule(dict(STOP, max_samples=3, min_samples=10))
        for v in (1e-3, 2e-3, 3e-3):
            r.add(v)
        self.assertEqual(r.state, "sample_cap")

    def test_a_steady_noisy_kernel_plateaus(self):
        rng = random.Random(7)
        r = StoppingRule(dict(STOP, min_time_s=0.0))
        n = 0
        while not r.done and n < 10000:
            r.add(0.01 * (1 + 0.02 * rng.gauss(0, 1)))
            n += 1
        self.assertEqual(r.state, "plateau")
        self.assertLess(n, 1000)

    def test_rejects_bad_samples(self):
        r = StoppingRule(STOP)
        with self.assertRaises(ValueError):
            r.add(float("nan"))
        with self.assertRaises(ValueError):
            r.add(-1.0)


if __name__ == "__main__":
    unittest.main()


class SharedVectorsTest(unittest.TestCase):
    """tests/data/stopping_rule_cases.json: the C++ rule reproduces the same stops
    (tests/unit/measure/stopping_rule_test.cpp)."""

    def test_every_case_stops_where_the_vectors_say(self):
        import json
        import os

        path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "stopping_rule_cases.json")
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        for c in cases:
            with self.subTest(c["why"]):
                r = StoppingRule(c["stop"])
                count = 0
                for sample, cost in c["series"]:
                    r.add(sample, cost)
                    count += 1
                    if r.done:
                        break
                self.assertEqual({"count": count, "reason": r.state}, c["expected"])
        self.assertEqual({c["expected"]["reason"] for c in cases},
                         {"converged", "plateau", "time_cap", "sample_cap", "not_done"})

    def test_the_plateau_settings_come_from_the_job(self):
        series = [1e-4 * (1.1 if k % 2 else 0.9) for k in range(400)]
        counts = []
        for window, drift in ((64, 0.02), (8, 0.2)):
            r = StoppingRule(dict(STOP, min_time_s=0.0, plateau_window=window, plateau_max_drift=drift))
            for s in series:
                r.add(s)
                if r.done:
                    break
            self.assertEqual(r.state, "plateau")
            counts.append(r.count)
        self.assertLess(counts[1], counts[0])
        with self.assertRaises(ValueError):
            StoppingRule(dict(STOP, plateau_window=2))
