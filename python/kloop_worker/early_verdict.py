"""The early verdict: a port of kloop::measure's early_verdict (src/measure/early_verdict.hpp).

An interleaved A/B shape stops once the samples so far settle its verdict: at looks n =
first_look * 2^k per side, each side's median gets an order-statistic interval at the
Bonferroni-corrected confidence ((1 - confidence) / max_looks per look, half per side), and the
speedup interval [base_lo / cand_hi, base_hi / cand_lo] is judged by the A/B verdict rule.
AMBIGUOUS never settles. tests/data/early_verdict_cases.json holds vectors the C++ and this port
must agree on. Pure standard library.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Dict, Optional, Sequence


def is_look(n: int, cfg: Dict[str, Any]) -> bool:
    first = int(cfg.get("first_look", 64))
    if first <= 0 or n < first or n % first != 0:
        return False
    m = n // first
    return (m & (m - 1)) == 0


def z_of(cfg: Dict[str, Any]) -> float:
    a = (1.0 - float(cfg.get("confidence", 0.95))) / max(1, int(cfg.get("max_looks", 12))) / 2.0
    return NormalDist().inv_cdf(1.0 - a / 2.0)


def _median_interval(xs: Sequence[float], z: float):
    n = len(xs)
    r = math.floor((n - z * math.sqrt(n)) / 2.0)
    s = math.ceil(1.0 + (n + z * math.sqrt(n)) / 2.0)
    if r < 1 or s > n:
        return None
    v = sorted(xs)
    return v[r - 1], v[s - 1]


def verdict_for(ci_low: float, ci_high: float, min_effect: float) -> str:
    """measure::verdict_for."""
    up = 1.0 + min_effect
    down = 1.0 / up
    if ci_low >= up:
        return "FASTER"
    if ci_high <= down:
        return "SLOWER"
    if ci_low >= down and ci_high <= up:
        return "SAME"
    return "AMBIGUOUS"


def settled_verdict(base: Sequence[float], cand: Sequence[float], cfg: Dict[str, Any]) -> Optional[str]:
    z = z_of(cfg)
    b = _median_interval(base, z)
    k = _median_interval(cand, z)
    if b is None or k is None or not (k[0] > 0.0) or not (b[0] > 0.0):
        return None
    v = verdict_for(b[0] / k[1], b[1] / k[0], float(cfg.get("min_effect", 0.02)))
    return None if v == "AMBIGUOUS" else v
