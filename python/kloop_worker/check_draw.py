"""Which timed calls are checked: the bench and A/B loops' draw.

Every call of the bench and A/B loops is prepared alike (worker.py: its set's values written
again, outputs poisoned, red zones rewritten, a few scattered input elements renewed), so nothing
in the buffers tells a candidate whether a call will be checked; this module decides which ones
are, after the call: timed sample s (0-based, per side) is checked with probability
min(1 / check_every, tail_checks / (s + 1)), a Bernoulli draw from numpy's PCG64 seeded with
``derive_seed(item.seed, "check-draw")`` (one draw for every sample, so the stream does not depend
on what was checked): 1 / check_every for the first check_every * tail_checks samples, then
about tail_checks more checks per e-fold of the sample count — spread over the whole run, with
no cap a candidate could wait out. The final check after the last sample comes on top. The
native runner draws the same way (runner/call_checks.hpp).
"""

from __future__ import annotations

import numpy as np

from .protocol import MASK64, derive_seed

class CheckDraw:
    """The draw of one bench item (one stream for every side of an A/B item)."""

    def __init__(self, item_seed: int, check_every: int, tail_checks: int):
        self.check_every = int(check_every)
        self.tail_checks = int(tail_checks)
        self._rng = np.random.Generator(np.random.PCG64(derive_seed(item_seed, "check-draw") & MASK64))

    @property
    def enabled(self) -> bool:
        """check_every <= 0 turns checking off, final check included (as natively)."""
        return self.check_every > 0

    def probability(self, sample: int) -> float:
        """The chance that timed sample ``sample`` (0-based, per side) is checked."""
        if not self.enabled:
            return 0.0
        return min(1.0 / self.check_every, self.tail_checks / (sample + 1))

    def draw(self, sample: int) -> bool:
        """Whether timed sample ``sample`` (0-based, per side) is checked."""
        u = self._rng.random()
        return bool(u < self.probability(sample))
