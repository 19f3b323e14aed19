"""Writes tests/data/stopping_rule_cases.json: stopping-rule settings, a series of (sample, cost)
pairs, and where the rule stops on them — the sample count and the reason — as the Python port
(python/kloop_worker/stopping.py) computes it. The C++ rule (src/measure/stopping_rule.cpp,
tests/unit/measure/stopping_rule_test.cpp) and the port (python/tests/test_stopping.py) must both
reproduce every expected value; each case is chosen so that the expected stop is what the rule
means (named in "why"), and every reason occurs.

    python3 tests/data/make_stopping_rule_cases.py
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kloop_worker.stopping import StoppingRule  # noqa: E402

DEFAULT = {"min_samples": 10, "min_time_s": 0.005, "target_rel_stdev": 0.005, "max_time_s": 1.0, "max_samples": 100000,
           "plateau_window": 64, "plateau_max_drift": 0.02}


def run(stop, series):
    r = StoppingRule(stop)
    for k, (sample, cost) in enumerate(series):
        r.add(sample, cost)
        if r.done:
            return {"count": k + 1, "reason": r.state}
    return {"count": len(series), "reason": r.state}


def noisy(rng, median, n, spread, cost=0.0):
    out = []
    for _ in range(n):
        s = round(median * (1.0 + rng.uniform(-spread, spread)), 9)
        out.append([s, round(s + cost, 9)])
    return out


def main():
    rng = random.Random(20261203)
    specs = [
        ("steady samples converge once the minima are met", {}, [[1e-4, 1e-4]] * 200),
        ("the minimum time counts the cost, not the sample", {"min_time_s": 0.01}, [[1e-5, 1e-3]] * 200),
        ("10 % noise settles on a plateau once the window is full", {}, noisy(rng, 1e-4, 400, 0.10)),
        ("a short window with a loose drift: an earlier plateau", {"plateau_window": 8, "plateau_max_drift": 0.2},
         noisy(rng, 1e-4, 400, 0.10)),
        ("a rising series never plateaus and hits the time cap", {"max_time_s": 0.05},
         [[round(1e-4 * (1 + 0.01 * k), 9), round(1e-4 * (1 + 0.01 * k), 9)] for k in range(400)]),
        ("the sample cap comes before the minimum sample count", {"max_samples": 5}, noisy(rng, 1e-4, 50, 0.10)),
        ("never done within the series", {"min_time_s": 10.0, "max_time_s": 20.0}, noisy(rng, 1e-4, 30, 0.10)),
    ]
    cases = []
    for why, over, series in specs:
        stop = dict(DEFAULT, **over)
        cases.append({"why": why, "stop": stop, "series": series, "expected": run(stop, series)})
    out = os.path.join(os.path.dirname(__file__), "stopping_rule_cases.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")
    for c in cases:
        print(c["expected"], c["why"])


if __name__ == "__main__":
    main()
