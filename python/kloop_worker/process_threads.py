"""This process's threads, as the one-process A/B sees them: which exist (/proc/self/task), what
each is named, how much CPU each has used, and the idle threads a side's import or warm-up left
behind, watched so that none of them runs while the sides are timed.

Why idle threads may stay: a package's dependencies start thread pools when they are loaded (a
BLAS library bundled by an extension starts one thread per CPU in its constructor). A pool that
sleeps from the end of the import to the end of the run does nothing beside the other side's
calls; one that runs at any point does, so the run falls back to separate processes. CPU time is
read per thread with its own CPU clock (``clock_gettime`` on the thread's clock id, nanoseconds;
/proc/self/task/<tid>/schedstat where that is refused), so a single wake-up — even one that only
queues GPU work — is seen. A thread that exits has run."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Dict, List, Optional, Set, Tuple


def thread_ids() -> Set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return {t.native_id for t in threading.enumerate() if t.native_id is not None}


def thread_count() -> int:
    return len(thread_ids())


def _comm(tid: int) -> str:
    try:
        with open("/proc/self/task/%d/comm" % tid, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def thread_names(tids: Optional[Set[int]] = None) -> Dict[str, int]:
    """How many of these threads (default: all of this process's) bear each name."""
    return dict(Counter(_comm(t) for t in (thread_ids() if tids is None else tids)))


def describe_names(names: Dict[str, int]) -> str:
    return ", ".join("%s x%d" % (n, c) for n, c in sorted(names.items()))


def thread_cpu_ns(tid: int) -> Optional[int]:
    """The CPU time thread `tid` of this process has used, in nanoseconds; None once it is gone."""
    clock = (~tid << 3) | 6  # Linux: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)
    try:
        return time.clock_gettime_ns(clock)
    except (OSError, OverflowError, ValueError):
        pass
    try:
        with open("/proc/self/task/%d/schedstat" % tid, encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_of(tids: Set[int]) -> Dict[int, Optional[int]]:
    return {t: thread_cpu_ns(t) for t in tids}


class StillRunning(Exception):
    """Threads that did not go quiet within the wait."""


class IdleThreads:
    """The threads adopted after an import or a warm-up call, each with the CPU time it had used
    once it went quiet. ``adopt`` waits (``quiet_s`` without a nanosecond of CPU, at most
    ``wait_s``) and raises StillRunning if they keep running; ``first_run`` says which of them
    has run since."""

    def __init__(self, known: Set[int], quiet_s: float = 0.1, wait_s: float = 2.0):
        self.known = set(known)  # the threads there before: not watched here
        self.cpu: Dict[int, int] = {}
        self.names: Dict[int, str] = {}
        self.left_by: Dict[int, str] = {}  # what each adopted thread was started by
        self.notes: List[Dict[str, str]] = []  # what adopted which threads, for the bench's output
        self.quiet_s = quiet_s
        self.wait_s = wait_s

    def unknown(self) -> Set[int]:
        return thread_ids() - self.known - set(self.cpu)

    def adopt(self, during: str, origin: str = "") -> Tuple[int, str]:
        """Adopts the threads started since the last look, once quiet. Returns how many, by name."""
        new = self.unknown()
        if not new:
            return 0, ""
        names = {t: _comm(t) for t in new}
        start = time.monotonic()
        before = cpu_of(new)
        while True:
            time.sleep(self.quiet_s)
            now = cpu_of(new)
            if all(now[t] == before[t] for t in new):  # a thread that is gone stays None
                break
            if time.monotonic() - start > self.wait_s:
                busy = sorted(((now[t] or 0) - (before[t] or 0), t) for t in new if now[t] != before[t])
                raise StillRunning("%d of them still running after %.1f s (%s)" % (
                    len(busy), time.monotonic() - start,
                    ", ".join("%s %d: %.1f ms of CPU in the last %.0f ms" % (names[t], t, ns / 1e6, self.quiet_s * 1e3)
                              for ns, t in busy[-3:])))
            before = now
        alive = {t for t in new if before[t] is not None}
        for t in alive:
            self.cpu[t] = before[t]
            self.names[t] = names[t]
            self.left_by[t] = during
        text = describe_names(Counter(names[t] for t in alive))
        if alive:
            note = {"during": during, "threads": text, "quiet_after_s": "%.2f" % (time.monotonic() - start)}
            if origin:
                note["origin"] = origin
            self.notes.append(note)
        return len(alive), text

    def first_run(self) -> Optional[str]:
        """The first adopted thread that has used CPU since it went quiet (or exited): "python3
        (tid 1234, started by importing side 'base'): 0.021 ms of CPU"; None while every one
        sleeps."""
        for t, ns in self.cpu.items():
            now = thread_cpu_ns(t)
            who = "%s (tid %d, started by %s)" % (self.names[t], t, self.left_by[t])
            if now is None:
                return who + " exited"
            if now != ns:
                return "%s: %.3f ms of CPU" % (who, (now - ns) / 1e6)
        return None
