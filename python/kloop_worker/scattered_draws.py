"""The partial change of a checked call: a few scattered input elements get fresh values.

A cache keyed on a sample of the inputs (a prefix, a sparse fingerprint of 64 elements) sees the
same key when only a handful of elements change, and replays outputs that are now wrong; a full
new arrangement (every value moves) never shows it that. So every other check (check_draw.py)
keeps the input set's current values and redraws ``min(16, total)`` positions, drawn uniformly
over *all* elements of the inputs whose initialiser draws elements independently (normal,
uniform, randint, logsigmoid_normal) taken together, each from its own tensor's initialiser.
Structured inputs (cu_seqlens, arange, const) keep their values: a changed offset would not be a
valid input.

Why the positions are drawn over the inputs together rather than per input: a fingerprint that
samples every input would notice a change in a small one (a 256-element weight vector, 64 of
its elements in the key), recompute and pass; drawn over all elements, the chance that any of
the changed positions falls in a fingerprint of M elements is at most 16 M / total, however the
fingerprint is spread over the inputs.

A fresh value may equal the old one (randint over a small range, bf16 rounding); no attempt is
made to avoid it: the expected number of elements that change stays close to 16.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from . import inits
from .protocol import MASK64, derive_seed

CHANGED_ELEMENTS = 16
IID_FORMS = ("normal", "uniform", "randint", "logsigmoid_normal")


def draw_positions(numels: List[int], seed: int, count: int = CHANGED_ELEMENTS) -> Dict[int, np.ndarray]:
    """``min(count, sum(numels))`` distinct positions drawn uniformly over the concatenation of
    the tensors (numels[i] elements each): {tensor index: sorted element positions in it}."""
    total = int(sum(numels))
    k = min(int(count), total)
    if k <= 0:
        return {}
    g = np.random.Generator(np.random.PCG64(derive_seed(seed, "positions") & MASK64))
    flat = np.sort(g.choice(total, size=k, replace=False)) if total > 4 * k else np.sort(g.permutation(total)[:k])
    out: Dict[int, np.ndarray] = {}
    start = 0
    for i, n in enumerate(numels):
        sel = flat[(flat >= start) & (flat < start + n)] - start
        if sel.size:
            out[i] = sel.astype(np.int64)
        start += n
    return out


def fresh_values(init: inits.Initializer, count: int, is_integer: bool, dims: Dict[str, int], seed: int) -> np.ndarray:
    """``count`` new values of an independent-draw initialiser (float64, or int64 for randint)."""
    if init.kind not in IID_FORMS:
        raise ValueError("init '%s' does not draw its elements independently" % init.text)
    return inits.generate(init, count, is_integer, dims, seed)


def plan_change(forms: List[inits.Initializer], numels: List[int], seed: int) -> List[Tuple[int, np.ndarray]]:
    """Which elements of which inputs a partial change rewrites: [(input index, positions)],
    only inputs with an independent-draw initialiser taking part."""
    eligible = [i for i, f in enumerate(forms) if f.kind in IID_FORMS and numels[i] > 0]
    picked = draw_positions([numels[i] for i in eligible], seed)
    return [(eligible[j], pos) for j, pos in sorted(picked.items())]
