"""Where a Python worker's wall time goes, per kind of operation: the twin of the native
runner's src/runner/op_timings.{hpp,cpp} (docs/measurement.md, "Where a bench's wall time goes").

With KLOOP_OP_TIMES naming a file, the worker adds up count and wall time per named operation —
each request to a candidate host (``host:time``, ``host:invoke``, ``host:flush``, …, from waking
the host to its stop) and the bench loops' enclosing phases (``phase:prepare``, ``phase:guards``,
``phase:checked_call`` with ``phase:reference`` and ``phase:compare`` inside it) — and appends
them to that file as one JSON line when the worker ends, as the native runners do: ``{"lifetime_s",
"timed_s", "ops": {name: {"count", "seconds", "max_s"}}, "runner": "python"}``. A phase contains
the requests made inside it: its time is not to be added to theirs. A candidate host, forked after
start(), keeps its own totals (its timer's pieces of a sample, ``timer:*``, and its handling of
each request, ``serve:*``); the checker asks for them before it closes the host and merges them
under ``in-host<N>:`` (snapshot, merge). They are the host's claims: a diagnostic, never read for
a result. Unset, every call is a no-op but one dictionary lookup. Pure standard library.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List

_path = ""
_born = time.perf_counter()
_totals: Dict[str, List[float]] = {}


def start() -> None:
    """Reads KLOOP_OP_TIMES and starts the clock: at the worker's start, not at import (a fork
    server imported this module for workers of other commands)."""
    global _path, _born
    _path = os.environ.get("KLOOP_OP_TIMES", "")
    _born = time.perf_counter()
    _totals.clear()


def enabled() -> bool:
    return bool(_path)


def add(name: str, seconds: float) -> None:
    if not _path:
        return
    t = _totals.get(name)
    if t is None:
        _totals[name] = [1, seconds, seconds]
    else:
        t[0] += 1
        t[1] += seconds
        if seconds > t[2]:
            t[2] = seconds


def snapshot() -> Dict[str, Dict[str, float]]:
    """This process's totals: {name: {"count", "seconds", "max_s"}}."""
    return {name: {"count": int(c), "seconds": s, "max_s": m} for name, (c, s, m) in sorted(_totals.items())}


def merge(prefix: str, ops) -> None:
    """Adds another process's snapshot under ``prefix``; entries that are not well-formed counts
    and seconds are skipped (they come from a candidate host)."""
    if not _path or not isinstance(ops, dict):
        return
    for name, v in list(ops.items())[:256]:
        try:
            c, s, m = int(v["count"]), float(v["seconds"]), float(v.get("max_s", 0.0))
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        key = prefix + str(name)[:64]
        t = _totals.setdefault(key, [0, 0.0, 0.0])
        t[0] += c
        t[1] += s
        t[2] = max(t[2], m)


@contextmanager
def scope(name: str) -> Iterator[None]:
    if not _path:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - t0)


def write() -> None:
    """Appends this process's totals to KLOOP_OP_TIMES (once; nothing when it is unset)."""
    global _path
    if not _path:
        return
    path, _path = _path, ""
    ops = snapshot()
    line = {"lifetime_s": time.perf_counter() - _born,
            "timed_s": sum(t[1] for name, t in _totals.items() if not name.startswith("in-host")),
            "ops": ops, "runner": "python"}
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except OSError:
        pass  # a diagnostic: never the worker's failure
