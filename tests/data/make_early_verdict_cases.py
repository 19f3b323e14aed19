"""Writes tests/data/early_verdict_cases.json: sample pairs and the verdict the early-verdict
rule settles for each (python/kloop_worker/early_verdict.py). The C++ rule
(src/measure/early_verdict.cpp, tests/unit/measure/early_verdict_test.cpp) and the Python port
(python/tests/test_early_verdict.py) must both reproduce every expected value; the cases are also
chosen so that the expected value is what the rule means (named in "why").

    python3 tests/data/make_early_verdict_cases.py
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kloop_worker.early_verdict import settled_verdict  # noqa: E402


def noisy(rng, median, n, spread):
    return [round(median * (1.0 + rng.uniform(-spread, spread)), 9) for _ in range(n)]


def main():
    rng = random.Random(20261130)
    cfg = {"min_effect": 0.02, "confidence": 0.95, "first_look": 64, "max_looks": 12, "min_time_s": 0.1}
    specs = [
        ("2x faster, 64 samples each", 2e-3, 1e-3, 64, 0.05, 0.05),
        ("2x slower, 64 samples each", 1e-3, 2e-3, 64, 0.05, 0.05),
        ("identical, tight, 256 each", 1e-3, 1e-3, 256, 0.005, 0.005),
        ("1 % apart, 5 % noise, 64 each: not settled", 1.01e-3, 1e-3, 64, 0.05, 0.05),
        ("3 % faster, 10 % noise, 64 each: not settled", 1.03e-3, 1e-3, 64, 0.10, 0.10),
        ("3 % faster, 0.2 % noise, 512 each", 1.03e-3, 1e-3, 512, 0.002, 0.002),
        ("8x faster, heavy tail on the base", 8e-3, 1e-3, 64, 0.5, 0.02),
        ("too few samples for the ranks", 2e-3, 1e-3, 8, 0.05, 0.05),
    ]
    cases = []
    for why, mb, mc, n, sb, sc in specs:
        base = noisy(rng, mb, n, sb)
        cand = noisy(rng, mc, n, sc)
        cases.append({"why": why, "base": base, "cand": cand, "expected": settled_verdict(base, cand, cfg)})
    out = os.path.join(os.path.dirname(__file__), "early_verdict_cases.json")
    with open(out, "w") as f:
        json.dump({"config": cfg, "cases": cases}, f, indent=0)
        f.write("\n")
    for c in cases:
        print(c["why"], "->", c["expected"])


if __name__ == "__main__":
    main()
