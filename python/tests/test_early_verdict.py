"""Unit under test: kloop_worker.early_verdict — the port of measure/early_verdict: the same look
schedule, the same z, and the same settled verdicts on the vectors shared with the C++ test
(tests/data/early_verdict_cases.json)."""
import json
import os
import unittest

from kloop_worker.early_verdict import is_look, settled_verdict, z_of

CASES = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "early_verdict_cases.json")


class EarlyVerdictTest(unittest.TestCase):
    def test_looks_at_powers_of_two_from_the_first_look(self):
        cfg = {"first_look": 64}
        self.assertEqual([n for n in range(0, 1100) if is_look(n, cfg)], [64, 128, 256, 512, 1024])

    def test_each_look_spends_its_share_of_the_error(self):
        self.assertAlmostEqual(z_of({"confidence": 0.95, "max_looks": 12}), 3.0781, places=3)
        self.assertAlmostEqual(z_of({"confidence": 0.95, "max_looks": 1}), 2.2414, places=3)

    def test_shared_vectors(self):
        with open(CASES) as f:
            doc = json.load(f)
        for case in doc["cases"]:
            with self.subTest(case["why"]):
                self.assertEqual(settled_verdict(case["base"], case["cand"], doc["config"]), case["expected"])
        self.assertIn(None, [c["expected"] for c in doc["cases"]])
        self.assertIn("FASTER", [c["expected"] for c in doc["cases"]])


if __name__ == "__main__":
    unittest.main()
