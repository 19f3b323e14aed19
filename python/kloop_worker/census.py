"""The kernel census of a checked GPU call, through torch.profiler (Kineto, i.e. CUPTI).

Produces the census JSON the native CUDA runner attaches to each checked call
(src/check/census_rules.hpp): ``{"available": true, "kernels": [{"name", "grid", "block",
"duration_ns", "start_ns", "end_ns", "stream"}], "dropped": 0, "event_s": ...}`` — judged by the
same four census checks (census_kernel_launched, census_vendor_kernels, census_kernel_set_stable,
census_time_vs_event).

A profiler that silently records nothing (CUPTI held by ncu or nsys, Kineto built without CUDA)
would make every call look kernel-less. So each profiled window starts with a kernel of kloop's
own (the stream-holding spin kernel, or a one-element fill): it must show up in the trace, and
is then removed from the list. When it does not, the census says ``"available": false``.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

KERNEL_CATEGORIES = ("kernel", "Kernel")


class Census:
    def __init__(self, torch, scratch_dir: str = ""):
        """``scratch_dir``: where the profiler's trace is written and read back; empty: the
        temporary directory (tempfile), which a confined host has to itself."""
        self.torch = torch
        self.scratch_dir = scratch_dir
        self.available = False
        self.reason = ""
        try:
            from torch import profiler  # noqa: F401

            acts = torch.profiler.supported_activities()
            if torch.profiler.ProfilerActivity.CUDA not in acts:
                self.reason = "torch.profiler does not support CUDA activities here"
            elif hasattr(torch.autograd, "kineto_available") and not torch.autograd.kineto_available():
                self.reason = "torch was built without Kineto"
            else:
                self.available = True
        except Exception as e:  # pragma: no cover - depends on the torch build
            self.reason = "torch.profiler unusable: %s" % e

    def unavailable(self, reason: Optional[str] = None) -> Dict[str, Any]:
        return {"available": False, "reason": reason or self.reason or "unavailable", "source": "torch.profiler"}

    def run(self, body: Callable[[], Any], canary_markers: Tuple[str, ...]) -> Tuple[Any, Dict[str, Any]]:
        """Runs ``body`` (which launches kloop's canary kernel first, then the call, and
        synchronizes) under the profiler; returns body's result and the census."""
        if not self.available:
            return body(), self.unavailable()
        torch = self.torch
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            record_shapes=False,
            with_stack=False,
        )
        prof.__enter__()
        try:
            result = body()
        finally:
            prof.__exit__(None, None, None)
        try:
            kernels = self._kernels(prof)
        except Exception as e:  # a trace kloop cannot read is no evidence either way
            return result, self.unavailable("cannot read the torch.profiler trace: %s" % e)
        kernels.sort(key=lambda k: k["start_ns"])
        canary = next((i for i, k in enumerate(kernels) if any(m in k["name"] for m in canary_markers)), None)
        if canary is None:
            return result, self.unavailable(
                "torch.profiler recorded %d kernels but not kloop's own probe kernel (is another profiler attached?)"
                % len(kernels)
            )
        del kernels[canary]
        return result, {"available": True, "kernels": kernels, "dropped": 0, "source": "torch.profiler"}

    def _kernels(self, prof) -> List[Dict[str, Any]]:
        fd, path = tempfile.mkstemp(prefix="kloop-census-", suffix=".json", dir=self.scratch_dir or None)
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path, "r", encoding="utf-8") as f:
                trace = json.load(f)
        finally:
            try:
                os.remove(path)
            except OSError:
                pass
        events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
        out = []
        for e in events:
            if not isinstance(e, dict) or e.get("cat") not in KERNEL_CATEGORIES or e.get("ph") not in (None, "X"):
                continue
            args = e.get("args", {}) or {}
            ts_us = float(e.get("ts", 0.0))
            dur_us = float(e.get("dur", 0.0))
            out.append(
                {
                    "name": str(e.get("name", "")),
                    "grid": _dim3(args.get("grid")),
                    "block": _dim3(args.get("block")),
                    "duration_ns": int(round(dur_us * 1000.0)),
                    "start_ns": int(round(ts_us * 1000.0)),
                    "end_ns": int(round((ts_us + dur_us) * 1000.0)),
                    "stream": int(args.get("stream", 0) or 0),
                    "registers": int(args.get("registers per thread", 0) or 0),
                    "shared_memory": int(args.get("shared memory", 0) or 0),
                }
            )
        return out


def _dim3(v) -> List[int]:
    if isinstance(v, (list, tuple)):
        vals = [int(x) for x in v][:3]
        return vals + [1] * (3 - len(vals))
    return [0, 0, 0]
