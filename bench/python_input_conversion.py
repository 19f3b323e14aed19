#!/usr/bin/env python3
"""The Python worker's bf16 conversion of generated inputs, side by side in one run (docs/perf.md,
"bf16 conversion of generated inputs"): the earlier uint64 + np.where form (kept here as a
reference) against kloop_worker.tensors.f64_to_bf16_bits, alternating, on the same values; checks
the bits agree.

  python3 bench/python_input_conversion.py [ELEMENTS=67108864] [ROUNDS=3]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kloop_worker import inits, tensors  # noqa: E402


def old_f64_to_bf16_bits(values):
    f = np.asarray(values, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded).astype(np.uint16)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384 * 4096
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    t = time.perf_counter()
    values = inits.generate(inits.parse("normal(0, 1)"), n, False, {}, 1234)
    gen = time.perf_counter() - t
    times = {"old": [], "new": []}
    for _ in range(rounds):
        for name, fn in (("old", old_f64_to_bf16_bits), ("new", tensors.f64_to_bf16_bits)):
            t = time.perf_counter()
            out = fn(values)
            times[name].append(time.perf_counter() - t)
            if name == "old":
                ref = out
            elif not np.array_equal(ref, out):
                sys.exit("the two forms disagree")
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(f"{n} normals generated in {gen:.2f} s; bf16 conversion, median of {rounds}: "
          f"old {med['old']:.2f} s, new {med['new']:.2f} s, ratio {med['old'] / med['new']:.2f}x; bits identical")


if __name__ == "__main__":
    main()
