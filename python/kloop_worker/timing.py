"""How one sample is taken: wall clock on the host, CUDA events on the GPU.

These are the Python twins of the native executors (src/runner/host_executor.cpp and
src/backend/cuda/cuda_executor.cpp); the bench loop around them (rotation, checked samples, the
stopping rule) is the same for both and lives in worker.py.

Host (numpy, or torch on the CPU e.g. under TRITON_INTERPRET=1): evict caches by writing one byte
per 64-byte line of a flush buffer, then ``time.perf_counter_ns`` around the call.

GPU (torch on CUDA), per sample (docs/measurement.md, "GPU timing protocol"):

1. flush L2 by reading max(flush_bytes, 2 x L2) bytes of a zeroed tensor, then
   ``torch.cuda.synchronize()``;
2. hold the stream: ``torch.cuda._sleep`` queues a one-thread spin kernel lasting longer than
   the host needs to queue the call, so Python's launch overhead stays out of the interval as the
   native runner's blocking kernel keeps it out. In a candidate host the checker names the hold
   in each request (remote_side.py: from the enqueue times the host reports, at most
   HOLD_CREDIT_MAX_S, and credited to the timer cross-check); otherwise it is twice the median of
   the last 16 enqueue times plus 20 us, 50 us to 50 ms (next_hold_s). The spin is sized in
   cycles at the last SM clock NVML read (the max clock before the first). A call that took
   longer to queue than the hold lasted is marked ``hold_timed_out``; every sample reports its
   ``enqueue_s``;
3. start event, the call, end event on the default (legacy) stream;
4. ``torch.cuda.synchronize()`` (device-wide), then the elapsed time;
5. SM clock and clock-event reasons from NVML (ctypes on libnvidia-ml.so.1); a sample below 75 %
   of the max SM clock for a throttling reason is marked ``discard`` (at most 20 times in a row,
   then kept and marked ``throttled``), and the worker, once it has verified the call, lets the
   GPU cool down (cool_down: 200 ms, then ~20 ms of back-to-back calls it prepares and verifies
   like every other); a low clock with only gpu_idle set is kept and marked ``low_clock_idle``.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import nvml as nvml_mod
from . import op_times

THROTTLE_FRACTION = 0.75
COOLDOWN_S = 0.2
MAX_CONSECUTIVE_DISCARDS = 20
HOLD_MIN_S = 50e-6
HOLD_MAX_S = 0.05
# The longest hold a checker names for a candidate host: it credits the hold to the timer
# cross-check, so this bounds what a host that skips its hold could hide per sample.
HOLD_CREDIT_MAX_S = 1e-3


def next_hold_s(enqueue_times) -> float:
    """The hold for the next sample from the recent enqueue times: twice their median plus 20 us,
    within [HOLD_MIN_S, HOLD_MAX_S]. The median, not the maximum: one slow enqueue (a Triton JIT
    compile in the first warm-up call, ~1 s) made every one of the next 16 samples spin 50 ms,
    which the stopping rule counts as measurement time — 6 samples per shape in a 0.3 s budget
    on the H200. A slow outlier is marked hold_timed_out instead."""
    if not enqueue_times:
        return 200e-6
    return min(HOLD_MAX_S, max(HOLD_MIN_S, 2.0 * statistics.median(enqueue_times) + 20e-6))


class CpuTimer:
    def __init__(self, backend):
        self.backend = backend
        self._flush = None
        self._pattern = 0

    def describe(self) -> Dict[str, Any]:
        d = {"device": "cpu", "timer": "time.perf_counter_ns"}
        d.update(self.backend.describe())
        return d

    def flush_caches(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        if self._flush is None or self._flush.size < nbytes:
            self._flush = np.zeros(nbytes, dtype=np.uint8)
        self._pattern = (self._pattern + 1) & 0xFF
        self._flush[:nbytes:64] = self._pattern

    def time_call(self, callee, kwargs, hold_s: Optional[float] = None) -> Tuple[float, Any, Optional[Dict[str, Any]]]:
        t0 = time.perf_counter_ns()
        ret = callee.invoke(kwargs)
        t1 = time.perf_counter_ns()
        return (t1 - t0) * 1e-9, ret, None

    def checked_call(self, callee, kwargs, census: bool):
        ret = callee.invoke(kwargs)
        self.backend.synchronize()
        return ret, None

    def cool_down(self, call_again) -> None:
        """Never needed: the host timer discards no sample."""


class CudaTimer:
    CANARY_MARKERS = ("spin_kernel", "FillFunctor")

    def __init__(self, backend, census):
        torch = backend.torch
        self.torch = torch
        self.backend = backend
        self.census = census
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.props = props
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
        self.l2_known = self.l2_bytes > 0
        if not self.l2_known:
            self.l2_bytes = 64 << 20  # larger than every current L2 but the B200's: flush 128 MiB
        self.flush_bytes_per_sample = 2 * self.l2_bytes
        self._flush = None
        self._canary = torch.zeros(1, dtype=torch.int32, device=backend.device)
        uuid = str(getattr(props, "uuid", "") or "")
        self.uuid = uuid if uuid.startswith("GPU-") or not uuid else "GPU-" + uuid
        self.nvml = nvml_mod.Nvml()
        self.clock_source = "nvml" if self.nvml.select(self.uuid, torch.cuda.current_device()) else "none"
        self.max_sm_clock_mhz = 0.0
        s = self.nvml.sample(with_max=True) if self.clock_source == "nvml" else None
        if s and s["max_sm_clock_mhz"] > 0:
            self.max_sm_clock_mhz = s["max_sm_clock_mhz"]
        if self.max_sm_clock_mhz <= 0:
            self.max_sm_clock_mhz = float(getattr(props, "clock_rate", 0) or 0) / 1000.0
        self.can_hold = hasattr(torch.cuda, "_sleep") and self.max_sm_clock_mhz > 0
        self._enqueue = deque(maxlen=16)
        self.hold_s = next_hold_s(self._enqueue)
        self._clock_mhz = 0.0  # the SM clock of the last NVML sample
        self._discards = 0
        self.last_info: Optional[Dict[str, Any]] = None

    def describe(self) -> Dict[str, Any]:
        p = self.props
        d: Dict[str, Any] = {
            "device": "cuda",
            "name": p.name,
            "uuid": self.uuid,
            "compute_capability": "%d.%d" % (p.major, p.minor),
            "sms": int(p.multi_processor_count),
            "l2_bytes": self.l2_bytes,
            "flush_bytes_per_sample": self.flush_bytes_per_sample,
            "flush": "read (amax over zeros, L2 left clean)",
            "global_memory_bytes": int(p.total_memory),
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "clock_source": self.clock_source,
            "throttle_fraction": THROTTLE_FRACTION,
            "hold": "torch.cuda._sleep" if self.can_hold else "none (launch overhead inside the interval)",
            "timer": "torch.cuda.Event pair; a spin kernel holds the stream while the call is queued; end event on "
                     "the default (legacy) stream; torch.cuda.synchronize per sample",
            "census": "torch.profiler" if self.census.available else "unavailable: " + self.census.reason,
        }
        if not self.l2_known:
            d["l2_bytes_note"] = "torch does not report the L2 size: assumed 64 MiB"
        if self.clock_source != "nvml":
            d["nvml_error"] = self.nvml.error or "no NVML device matches torch's device"
        d.update(self.backend.describe())
        return d

    # -- pieces of a sample -------------------------------------------------------------------

    def flush_caches(self, nbytes: int) -> None:
        # A read of max(nbytes, 2 x L2) as the CUDA executor's flush: every line is evicted (the
        # previous call's dirty outputs are written back now, not inside the timed call) and L2
        # is left clean (docs/measurement.md).
        torch = self.torch
        n = (max(int(nbytes), self.flush_bytes_per_sample) + 7) // 8
        if self._flush is None or self._flush.numel() < n:
            self._flush = torch.zeros(n, dtype=torch.int64, device=self.backend.device)
        self._flush[:n].amax()
        torch.cuda.synchronize()

    def _hold(self, hold_s: float) -> None:
        if self.can_hold:
            mhz = self._clock_mhz if self._clock_mhz > 0 else self.max_sm_clock_mhz
            self.torch.cuda._sleep(int(hold_s * mhz * 1e6))
        else:
            self._canary.fill_(1)  # the census's probe kernel when there is no spin kernel

    def _note_enqueue(self, t_enqueue: float, hold_s: float) -> bool:
        timed_out = self.can_hold and t_enqueue > hold_s
        self._enqueue.append(t_enqueue)
        self.hold_s = next_hold_s(self._enqueue)
        return timed_out

    def _timed(self, callee, kwargs, hold_s: Optional[float] = None) -> Tuple[float, Any, bool, float]:
        """(event seconds, the call's return, whether the hold timed out, enqueue seconds)."""
        torch = self.torch
        hold = self.hold_s if hold_s is None else hold_s
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        t_hold = time.perf_counter()
        self._hold(hold)
        start.record()
        t0 = time.perf_counter()
        ret = callee.invoke(kwargs)
        t1 = time.perf_counter()
        end.record(torch.cuda.default_stream())
        torch.cuda.synchronize()
        t_enqueue = t1 - t0
        # The pieces for KLOOP_OP_TIMES, from the clock reads the sample takes anyway (no-ops unset).
        op_times.add("timer:hold", t0 - t_hold)
        op_times.add("timer:enqueue", t_enqueue)
        op_times.add("timer:sync", time.perf_counter() - t1)
        return start.elapsed_time(end) * 1e-3, ret, self._note_enqueue(t_enqueue, hold), t_enqueue

    # -- the executor's interface ---------------------------------------------------------------

    def time_call(self, callee, kwargs, hold_s: Optional[float] = None) -> Tuple[float, Any, Optional[Dict[str, Any]]]:
        """One sample; ``hold_s``: the hold the checker names (None: this timer's own choice)."""
        dt, ret, hold_timed_out, t_enqueue = self._timed(callee, kwargs, hold_s)
        t_clock = time.perf_counter()
        info = self._record_clock(hold_timed_out)
        op_times.add("timer:clock", time.perf_counter() - t_clock)
        info["enqueue_s"] = t_enqueue
        return dt, ret, info

    def checked_call(self, callee, kwargs, census: bool):
        """A checked call: runs to completion (device-wide). With ``census`` the call runs under
        torch.profiler and its kernels come back (plus its event time when the hold covered the
        queueing)."""
        torch = self.torch
        if not census:
            ret = callee.invoke(kwargs)
            torch.cuda.synchronize()
            return ret, None
        if not self.census.available:
            ret = callee.invoke(kwargs)
            torch.cuda.synchronize()
            return ret, self.census.unavailable()

        def body():
            torch.cuda.synchronize()
            return self._timed(callee, kwargs)

        (event_s, ret, hold_timed_out, _), c = self.census.run(body, self.CANARY_MARKERS)
        if c.get("available") and self.can_hold and not hold_timed_out:
            c["event_s"] = event_s
        return ret, c

    def cool_down(self, call_again) -> None:
        """After a discarded sample: 200 ms of rest, then ~20 ms of back-to-back calls, each made
        by ``call_again()`` (the worker prepares and verifies them like every other call)."""
        time.sleep(COOLDOWN_S)
        t0 = time.perf_counter()
        for i in range(100000):
            call_again()
            if i % 16 == 15:
                self.torch.cuda.synchronize()
                if time.perf_counter() - t0 > 0.02:
                    break
        self.torch.cuda.synchronize()

    def _record_clock(self, hold_timed_out: bool) -> Dict[str, Any]:
        info: Dict[str, Any] = {}
        mhz = 0.0
        reasons = None
        if self.clock_source == "nvml":
            s = self.nvml.sample()
            if s:
                mhz = s["sm_clock_mhz"]
                reasons = s["reasons"]
                if reasons is not None:
                    info["clock_event_reasons"] = reasons
                    if reasons & ~nvml_mod.GPU_IDLE:
                        info["reasons"] = nvml_mod.describe_reasons(reasons)
        if mhz > 0:
            info["sm_clock_mhz"] = round(mhz)
            self._clock_mhz = mhz
        if hold_timed_out:
            info["hold_timed_out"] = True
        low = mhz > 0 and self.max_sm_clock_mhz > 0 and mhz < THROTTLE_FRACTION * self.max_sm_clock_mhz
        throttled = low and (reasons is None or (reasons & nvml_mod.THROTTLE_BITS) != 0)
        if low and not throttled:
            info["low_clock_idle"] = True
        if throttled:
            if self._discards < MAX_CONSECUTIVE_DISCARDS:
                self._discards += 1
                info["discard"] = True
            else:
                info["throttled"] = True
        else:
            self._discards = 0
        self.last_info = info
        return info
