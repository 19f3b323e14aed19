"""The worker's side of kloop's runner protocol: the job, the events, seed derivation.

Pure (standard library only): the job JSON written by kloop (src/runner/job.cpp, schema 1) read
into plain objects, the JSON-lines event channel (one object per line, flushed at once, so kloop
still reads every event when the worker is killed), and ``derive_seed``, a bit-exact port of
kloop::derive_seed (src/core/rng.cpp) so that a sub-stream label names the same seed here as in
the native runner.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

JOB_SCHEMA_VERSION = 1
# The events this worker writes: src/runner/event_schema.json (the C++ runner's
# runner::k_events_schema_version); python/tests/test_event_schema.py holds them to it.
EVENTS_SCHEMA_VERSION = 1


def start_event(phase: str, **more):
    """The first event of a job: which process, which ABI, which events schema, which phase."""
    e = {"event": "start", "pid": os.getpid(), "abi": 1, "schema_version": EVENTS_SCHEMA_VERSION, "phase": phase}
    e.update(more)
    return e
MASK64 = (1 << 64) - 1


class JobError(Exception):
    """A job this worker cannot run (bad schema, unknown field value)."""


# ---- seeds ---------------------------------------------------------------------------------


def splitmix64_next(state: int):
    """One splitmix64 step: returns (new_state, output), as kloop::splitmix64_next."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def derive_seed(base: int, label: str) -> int:
    """The seed of a named sub-stream: kloop::derive_seed, bit for bit."""
    h = 0xCBF29CE484222325
    for ch in label.encode("utf-8"):
        h ^= ch
        h = (h * 0x100000001B3) & MASK64
    state, mixed = splitmix64_next(base & MASK64)
    _, out = splitmix64_next(mixed ^ h)
    return out


# ---- JSON numbers --------------------------------------------------------------------------


def json_number(v: float):
    """A double as kloop writes metrics: non-finite values as "nan", "inf", "-inf"."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


# ---- the job -------------------------------------------------------------------------------


@dataclass
class Tolerance:
    atol: Optional[float] = None
    rtol: Optional[float] = None
    rel_rms: Optional[float] = None

    @property
    def has_elementwise(self) -> bool:
        return self.atol is not None or self.rtol is not None


@dataclass
class TensorPlan:
    name: str
    dtype: str
    shape: List[int]
    init: str = ""
    inout: bool = False
    tol: Tolerance = field(default_factory=Tolerance)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class Param:
    name: str
    value: float
    is_integer: bool

    @property
    def python_value(self):
        return int(self.value) if self.is_integer else float(self.value)


@dataclass
class CallPlan:
    mode: str
    shape: str
    entry: str
    reference_entry: str
    dims: Dict[str, int]
    inputs: List[TensorPlan]
    outputs: List[TensorPlan]
    params: List[Param]

    @property
    def label(self) -> str:
        return self.mode + "/" + self.shape


@dataclass
class GateCase:
    id: int
    call: int
    trial: int
    seed: int


@dataclass
class BenchItem:
    """One bench item of the job. check_every / tail_checks drive the check draw (check_draw.py)."""

    id: int
    call: int
    seed: int
    input_sets: int
    flush_bytes: int
    check_every: int
    tail_checks: int
    warmup_min_calls: int
    warmup_min_s: float
    stop: Dict[str, Any]
    early_verdict: Optional[Dict[str, Any]] = None  # ab phase: measure/early_verdict.hpp's config
    # No cap ends a series with the checker's windows before this many samples (the C++
    # bench_item::timer_min_windows; absent from a job: its default, 5).
    timer_min_windows: int = 5


@dataclass
class Job:
    phase: str
    candidate_lib: str
    reference_lib: str
    base_lib: str
    candidate_device: str
    reference_device: str
    evict_bytes: int
    calls: List[CallPlan]
    gate: List[GateCase]
    bench: List[BenchItem]


def _tolerance(j: Dict[str, Any]) -> Tolerance:
    return Tolerance(atol=j.get("atol"), rtol=j.get("rtol"), rel_rms=j.get("rel_rms"))


def _tensor(j: Dict[str, Any]) -> TensorPlan:
    return TensorPlan(
        name=j["name"],
        dtype=j["dtype"],
        shape=[int(d) for d in j["shape"]],
        init=j.get("init", "") or "",
        inout=bool(j.get("inout", False)),
        tol=_tolerance(j.get("tolerance", {})),
    )


def parse_job(j: Dict[str, Any]) -> Job:
    """The job kloop wrote; raises JobError for a schema this worker does not read."""
    try:
        version = int(j["schema_version"])
        if version != JOB_SCHEMA_VERSION:
            raise JobError(
                "job: schema_version %d is not supported (this worker reads %d)" % (version, JOB_SCHEMA_VERSION)
            )
        phase = j["phase"]
        if phase not in ("gate", "bench", "ab", "profile"):
            raise JobError("job: bad phase '%s'" % phase)
        calls = []
        for c in j["calls"]:
            calls.append(
                CallPlan(
                    mode=c["mode"],
                    shape=c["shape"],
                    entry=c["entry"],
                    reference_entry=c["reference_entry"],
                    dims={k: int(v) for k, v in c["dims"].items()},
                    inputs=[_tensor(t) for t in c["inputs"]],
                    outputs=[_tensor(t) for t in c["outputs"]],
                    params=[Param(p["name"], float(p["value"]), bool(p["is_integer"])) for p in c["params"]],
                )
            )
        n = len(calls)

        def check_call(i: int) -> int:
            if i < 0 or i >= n:
                raise JobError("job: call index out of range")
            return i

        gate = [GateCase(int(g["id"]), check_call(int(g["call"])), int(g["trial"]), int(g["seed"])) for g in j["gate"]]
        bench = []
        for b in j["bench"]:
            bench.append(
                BenchItem(
                    id=int(b["id"]),
                    call=check_call(int(b["call"])),
                    seed=int(b["seed"]),
                    input_sets=int(b["input_sets"]),
                    flush_bytes=int(b["flush_bytes"]),
                    check_every=int(b["check_every"]),
                    tail_checks=int(b["tail_checks"]),
                    warmup_min_calls=int(b["warmup_min_calls"]),
                    warmup_min_s=float(b["warmup_min_s"]),
                    stop=dict(b["stop"]),
                    early_verdict=dict(b["early_verdict"]) if b.get("early_verdict") else None,
                    timer_min_windows=int(b.get("timer_min_windows", 5)),
                )
            )
        base_lib = j.get("base_lib", "") or ""
        if phase == "ab" and not base_lib:
            raise JobError("job: phase 'ab' needs a base_lib")
        return Job(
            phase=phase,
            candidate_lib=j["candidate_lib"],
            reference_lib=j["reference_lib"],
            base_lib=base_lib,
            candidate_device=j.get("candidate_device", "python"),
            reference_device=j.get("reference_device", "python"),
            evict_bytes=int(j.get("evict_bytes", 0)),
            calls=calls,
            gate=gate,
            bench=bench,
        )
    except JobError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise JobError("job: malformed (%s: %s)" % (type(e).__name__, e)) from e


# ---- the event channel ---------------------------------------------------------------------


class EventWriter:
    """Appends one JSON object per line to the events file and flushes it at once.

    The worker is the file's only writer. It keeps what it wrote, and ``untouched()`` says
    whether the file still holds exactly that: a candidate host is not confined and could open
    the file by its path and add or rewrite lines. ``restore()`` puts the worker's own lines back."""

    def __init__(self, path: str):
        # O_CLOEXEC: a process the candidate starts must not inherit the channel.
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._fd = fd
        self._written = bytearray()

    def write(self, event: Dict[str, Any]) -> None:
        line = (json.dumps(event, allow_nan=False, separators=(",", ":"), default=_json_default) + "\n").encode("utf-8")
        os.pwrite(self._fd, line, len(self._written))
        self._written += line

    def untouched(self) -> bool:
        """Whether the file holds exactly the lines written here (read through this writer's own
        descriptor: a file replaced under the same name is not the one kloop will read, but the
        renamed-over path is; both are compared)."""
        try:
            if os.fstat(self._fd).st_size != len(self._written):
                return False
            if os.pread(self._fd, len(self._written) + 1, 0) != bytes(self._written):
                return False
            st_path, st_fd = os.stat(self.path), os.fstat(self._fd)
            return (st_path.st_dev, st_path.st_ino) == (st_fd.st_dev, st_fd.st_ino)
        except OSError:
            return False

    def restore(self) -> None:
        """The file := the lines written here, at its path (a new file if it was replaced)."""
        try:
            st_path, st_fd = os.stat(self.path), os.fstat(self._fd)
            same = (st_path.st_dev, st_path.st_ino) == (st_fd.st_dev, st_fd.st_ino)
        except OSError:
            same = False
        if not same:
            os.close(self._fd)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, bytes(self._written), 0)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _json_default(o):
    # numpy scalars and the like: ints stay ints, the rest become floats.
    try:
        import numbers

        if isinstance(o, numbers.Integral):
            return int(o)
        if isinstance(o, numbers.Real):
            return json_number(float(o))
    except Exception:  # pragma: no cover - defensive
        pass
    return str(o)


# How often a timing loop reports its progress (the runner's k_progress_interval_s).
PROGRESS_INTERVAL_S = 0.5


def progress_event(item_id: int, rules: "List[Any]") -> Dict[str, Any]:
    """The live display's view of one timed item (events.hpp's progress_event): the side with
    fewer samples, the timed total of all sides, the widest spread and the rule's target. For
    the display only: no check reads it."""
    e: Dict[str, Any] = {"event": "progress", "id": item_id,
                         "samples": min(r.count for r in rules),
                         "time_s": float(sum(r.total_s for r in rules)),
                         "target_rel_stdev": float(rules[0].target_rel_stdev)}
    spread = max(r.rel_stdev() for r in rules)
    if math.isfinite(spread):
        e["rel_stdev"] = float(spread)
    return e
