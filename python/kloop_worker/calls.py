"""One call made in this process: a checked call or a timed sample, and what came of it.

``LocalCalls`` runs a bound function (candidate.Callee) on a set of buffers with this process's
timer (timing.py) and numeric flags (candidate.NumericFlags), and turns everything the function
can do wrong — raise, return something that cannot be its outputs, change a numeric flag, break
the CUDA context — into an ``Outcome``. The worker uses it for the reference (always in its own
process) and, with KLOOP_PYTHON_SPLIT=0, for the candidate; the candidate host
(candidate_host.py) uses it for the candidate, and its Outcome travels to the checker as a
claim (``Outcome.to_json`` / ``Outcome.from_claim``).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .candidate import OutputError, describe_exception, use_caches


@dataclass
class Outcome:
    return_code: int = 0
    device_error: str = ""
    exception: Optional[Dict[str, Any]] = None
    sticky: bool = False
    census: Optional[Dict[str, Any]] = None
    flags_changed: List[Dict[str, Any]] = field(default_factory=list)
    # Set by the checker when the candidate's host died or broke the protocol during the call.
    host_died: bool = False

    def ok(self) -> bool:
        return self.return_code == 0 and not self.device_error

    def to_json(self) -> Dict[str, Any]:
        j: Dict[str, Any] = {"return_code": self.return_code, "device_error": self.device_error,
                             "sticky": self.sticky, "flags_changed": self.flags_changed}
        if self.exception is not None:
            j["exception"] = self.exception
        if self.census is not None:
            j["census"] = self.census
        return j

    @staticmethod
    def from_claim(j: Any) -> "Outcome":
        """A host's reply read defensively: it comes from the candidate's process. Fields of the
        wrong type make the call a failure rather than the checker's crash."""
        if not isinstance(j, dict):
            return Outcome(return_code=1, device_error="the candidate host sent a malformed reply")
        rc = j.get("return_code", 1)
        err = j.get("device_error", "")
        if not isinstance(rc, int) or isinstance(rc, bool) or not isinstance(err, str):
            return Outcome(return_code=1, device_error="the candidate host sent a malformed reply")
        out = Outcome(return_code=rc, device_error=err[:2000], sticky=bool(j.get("sticky", False)))
        exc = j.get("exception")
        if isinstance(exc, dict):
            out.exception = {k: exc.get(k) for k in ("type", "message", "where")}
        census = j.get("census")
        if isinstance(census, dict):
            out.census = census
        flags = j.get("flags_changed")
        if isinstance(flags, list):
            out.flags_changed = [f for f in flags if isinstance(f, dict)]
        return out


def sample_seconds(value: Any) -> Optional[float]:
    """A claimed sample as a finite, non-negative number of seconds, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) and v >= 0 else None


class LocalCalls:
    """Calls made in this process, with this process's backend, timer and numeric flags."""

    def __init__(self, backend, timer, flags):
        self.backend = backend
        self.timer = timer
        self.flags = flags

    def _device_broken(self) -> bool:
        if not self.backend.is_cuda:
            return False
        try:
            self.backend.torch.cuda.synchronize()
            return False
        except Exception:
            return True

    def failure(self, callee, e: BaseException) -> Outcome:
        if isinstance(e, KeyboardInterrupt):
            raise e
        if isinstance(e, OutputError):
            return Outcome(return_code=1, device_error="bad return value: " + str(e))
        info = describe_exception(e, callee.files)
        sys.stderr.write("kloop-worker: %s raised:\n%s" % (os.path.basename(callee.manifest["source"]), info["traceback"]))
        sys.stderr.flush()
        sticky = self._device_broken()
        exc = {k: info[k] for k in ("type", "message", "where")}
        return Outcome(return_code=1, device_error="Python exception: " + info["text"], exception=exc, sticky=sticky)

    def _check_flags(self, out: Outcome) -> Outcome:
        changed = self.flags.changed()
        if changed:
            out.flags_changed = changed
            self.flags.apply()
        return out

    def invoke(self, callee, bufs, census: bool = False) -> Outcome:
        """A checked call, run to completion (device-wide)."""
        use_caches(callee.manifest)
        self.flags.apply()
        try:
            kw = callee.kwargs(bufs)
            ret, c = self.timer.checked_call(callee, kw, census)
            rc = callee.finish(ret, bufs)
            self.backend.synchronize()
            out = Outcome(return_code=rc, census=c)
        except BaseException as e:  # noqa: BLE001 - the candidate may raise anything
            out = self.failure(callee, e)
        return self._check_flags(out)

    def time_call(self, callee, bufs, hold_s=None):
        """One timed sample (caches already flushed): (seconds, outcome, sample info); ``hold_s``:
        the GPU hold the checker names (timing.py)."""
        use_caches(callee.manifest)
        self.flags.apply()
        dt, info = 0.0, None
        try:
            kw = callee.kwargs(bufs)
            dt, ret, info = self.timer.time_call(callee, kw, hold_s)
            rc = callee.finish(ret, bufs)
            self.backend.synchronize()
            out = Outcome(return_code=rc)
        except BaseException as e:  # noqa: BLE001
            out = self.failure(callee, e)
        return dt, self._check_flags(out), info
