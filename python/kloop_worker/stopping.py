"""The stopping rule of the bench: a port of kloop::measure::stopping_rule.

Same state, same order of tests, same reasons ("converged", "plateau", "time_cap",
"sample_cap"), so a Python candidate is measured until the rule the native runner applies says
stop (docs/measurement.md, "Stopping rule"). Every parameter comes in the job's bench items, the
plateau window and drift included (absent: the C++ defaults, 64 and 0.02). Both rules reproduce
the vectors of tests/data/stopping_rule_cases.json. Pure standard library.
"""

from __future__ import annotations

import math
from typing import Any, Dict

NOT_DONE = "not_done"


class StoppingRule:
    def __init__(self, stop: Dict[str, Any], plateau_window: int = 64, plateau_max_drift: float = 0.02):
        self.min_samples = int(stop.get("min_samples", 10))
        self.min_time_s = float(stop.get("min_time_s", 0.5))
        self.target_rel_stdev = float(stop.get("target_rel_stdev", 0.005))
        self.max_time_s = float(stop.get("max_time_s", 15.0))
        self.max_samples = int(stop.get("max_samples", 100000))
        plateau_window = int(stop.get("plateau_window", plateau_window))
        plateau_max_drift = float(stop.get("plateau_max_drift", plateau_max_drift))
        if plateau_window < 3:
            raise ValueError("stopping rule: plateau_window must be >= 3")
        self.plateau_max_drift = plateau_max_drift
        self._k = plateau_window
        self._hist = [0.0] * plateau_window
        self._hist_size = 0
        self._head = 0
        self._since_recompute = 0
        self._sum_y = 0.0
        self._sum_xy = 0.0
        self.count = 0
        self.total_s = 0.0
        self._mean = 0.0
        self._m2 = 0.0
        self.state = NOT_DONE

    @property
    def done(self) -> bool:
        return self.state != NOT_DONE

    def add(self, sample_s: float, cost_s: float = 0.0) -> None:
        """cost_s: the wall time taking the sample cost (flush, sync, clock reads); the time
        budgets count it (measurement time, as the C++ rule); a smaller value counts the sample."""
        if not math.isfinite(sample_s) or sample_s < 0.0:
            raise ValueError("stopping rule: sample must be a finite, non-negative duration")
        self.count += 1
        self.total_s += cost_s if math.isfinite(cost_s) and cost_s > sample_s else sample_s
        delta = sample_s - self._mean
        self._mean += delta / self.count
        self._m2 += delta * (sample_s - self._mean)
        if self.count >= 2:
            rel = self.rel_stdev()
            if math.isfinite(rel):
                self._push(rel)
        self.state = self._evaluate()

    def rel_stdev(self) -> float:
        if self.count < 2 or self._mean == 0.0:
            return math.inf
        var = self._m2 / (self.count - 1) if self._m2 > 0.0 else 0.0
        return math.sqrt(var) / self._mean

    def _push(self, y: float) -> None:
        k = self._k
        if self._hist_size < k:
            self._hist[(self._head + self._hist_size) % k] = y
            self._sum_xy += self._hist_size * y
            self._sum_y += y
            self._hist_size += 1
        else:
            self._sum_y -= self._hist[self._head]
            self._sum_xy -= self._sum_y
            self._hist[self._head] = y
            self._head = (self._head + 1) % k
            self._sum_y += y
            self._sum_xy += (k - 1) * y
        self._since_recompute += 1
        if self._since_recompute >= k:
            self._recompute()

    def _recompute(self) -> None:
        k = self._k
        self._sum_y = 0.0
        self._sum_xy = 0.0
        for x in range(self._hist_size):
            y = self._hist[(self._head + x) % k]
            self._sum_y += y
            self._sum_xy += x * y
        self._since_recompute = 0

    def rel_stdev_drift(self) -> float:
        k = self._k
        if self._hist_size < k:
            return math.inf
        kk = float(k)
        sx = kk * (kk - 1.0) / 2.0
        sxx = (kk - 1.0) * kk * (2.0 * kk - 1.0) / 6.0
        slope = (kk * self._sum_xy - sx * self._sum_y) / (kk * sxx - sx * sx)
        level = self._sum_y / kk
        if level <= 0.0:
            return 0.0 if slope == 0.0 else math.inf
        return abs(slope) * (kk - 1.0) / level

    def _evaluate(self) -> str:
        minima = self.count >= self.min_samples and self.total_s >= self.min_time_s
        if minima:
            if self.rel_stdev() <= self.target_rel_stdev:
                return "converged"
            if self.rel_stdev_drift() <= self.plateau_max_drift:
                return "plateau"
        if self.count >= self.max_samples:
            return "sample_cap"
        if self.total_s >= self.max_time_s:
            return "time_cap"
        return NOT_DONE
