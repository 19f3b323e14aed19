"""Which timed calls are checked: the bench and A/B loops' draw.

Every call of the bench and A/B loops is prepared alike (worker.py: its set's values written
again, outputs poisoned, red zones rewritten, a few scattered input elements renewed), so nothing
in the buffers tells a candidate whether a call will be checked; this module decides which ones
are, after the call: each timed sample is checked with probability 1 / check_every, a Bernoulli
draw from numpy's PCG64 seeded with ``derive_seed(item.seed, "check-draw")``, at most
``max_checks`` per side and item (a draw is made for every sample, capped or not, so the stream
does not depend on what was checked); the final check after the last sample comes on top.
The draw is unpredictable from the documentation, not secret from a process that can read the
job file: the Python candidate host is not confined (docs/python.md, "Limits").
"""

from __future__ import annotations

import numpy as np

from .protocol import MASK64, derive_seed

class CheckDraw:
    """The Bernoulli draw of one bench item (one stream for every side of an A/B item)."""

    def __init__(self, item_seed: int, check_every: int, max_checks: int):
        self.check_every = int(check_every)
        self.max_checks = int(max_checks)
        self._rng = np.random.Generator(np.random.PCG64(derive_seed(item_seed, "check-draw") & MASK64))

    @property
    def enabled(self) -> bool:
        """check_every <= 0 turns checking off, final check included (as natively)."""
        return self.check_every > 0

    def draw(self, checks_done: int) -> bool:
        """Whether the next timed sample is checked, given the checks its side has had."""
        if not self.enabled:
            return False
        hit = bool(self._rng.random() * self.check_every < 1.0)
        return hit and checks_done < self.max_checks
