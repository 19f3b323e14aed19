"""NVML through ctypes: the SM clock and the clock-event (throttle) reasons after every sample.

The same calls as src/backend/cuda/nvml_loader.cpp — nvmlDeviceGetClockInfo(SM),
nvmlDeviceGetMaxClockInfo(SM), nvmlDeviceGetCurrentClocksEventReasons (or the older
nvmlDeviceGetCurrentClocksThrottleReasons) — on libnvidia-ml.so.1, loaded with ctypes (pynvml is
not required). The device is picked by UUID (torch's view of device 0), else by index.
"""

from __future__ import annotations

import ctypes
from typing import Optional

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1

GPU_IDLE = 0x1
APPLICATIONS_CLOCKS_SETTING = 0x2
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SYNC_BOOST = 0x10
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40
HW_POWER_BRAKE_SLOWDOWN = 0x80
DISPLAY_CLOCK_SETTING = 0x100
THROTTLE_BITS = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN

_NAMES = [
    (GPU_IDLE, "gpu_idle"),
    (APPLICATIONS_CLOCKS_SETTING, "applications_clocks_setting"),
    (SW_POWER_CAP, "sw_power_cap"),
    (HW_SLOWDOWN, "hw_slowdown"),
    (SYNC_BOOST, "sync_boost"),
    (SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
    (HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
    (HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown"),
    (DISPLAY_CLOCK_SETTING, "display_clock_setting"),
]


def describe_reasons(mask: int) -> str:
    """describe_clock_event_reasons: "sw_power_cap|hw_slowdown", "none"."""
    if mask == 0:
        return "none"
    parts = []
    rest = mask
    for bit, name in _NAMES:
        if mask & bit:
            parts.append(name)
            rest &= ~bit
    if rest:
        parts.append("0x%x" % rest)
    return "|".join(parts)


class Nvml:
    def __init__(self, library: str = "libnvidia-ml.so.1"):
        self.error = ""
        self._lib = None
        self._dev = None
        self._reasons = None
        try:
            lib = ctypes.CDLL(library)
            rc = lib.nvmlInit_v2()
            if rc != NVML_SUCCESS:
                self.error = "nvmlInit_v2 returned %d" % rc
                return
            self._lib = lib
            for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
                fn = getattr(lib, name, None)
                if fn is not None:
                    self._reasons = fn
                    break
        except OSError as e:
            self.error = str(e)
        except AttributeError as e:
            self.error = "not an NVML library: %s" % e

    @property
    def available(self) -> bool:
        return self._lib is not None and self._dev is not None

    def select(self, uuid: str, index: int) -> bool:
        if self._lib is None:
            return False
        lib = self._lib
        n = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(n)) != NVML_SUCCESS:
            return False

        def bare(u: str) -> str:
            return u[4:] if u.startswith("GPU-") else u

        if uuid:
            for i in range(n.value):
                h = ctypes.c_void_p()
                buf = ctypes.create_string_buffer(96)
                if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)) == NVML_SUCCESS and \
                        lib.nvmlDeviceGetUUID(h, buf, ctypes.c_uint(96)) == NVML_SUCCESS and \
                        bare(buf.value.decode(errors="replace")).lower() == bare(uuid).lower():
                    self._dev = h
                    return True
        if 0 <= index < n.value:
            h = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(h)) == NVML_SUCCESS:
                self._dev = h
                return True
        return False

    def sample(self, with_max: bool = False) -> Optional[dict]:
        """{"sm_clock_mhz", "max_sm_clock_mhz" (0 unless ``with_max``), "reasons" (or None when
        unknown)}, or None. The max clock is a constant: read it once, not per sample (every
        NVML query is a driver round trip, ~0.5 ms on the H200 host)."""
        if not self.available:
            return None
        lib = self._lib
        mhz = ctypes.c_uint(0)
        if lib.nvmlDeviceGetClockInfo(self._dev, ctypes.c_int(NVML_CLOCK_SM), ctypes.byref(mhz)) != NVML_SUCCESS:
            return None
        mx = ctypes.c_uint(0)
        if with_max and lib.nvmlDeviceGetMaxClockInfo(self._dev, ctypes.c_int(NVML_CLOCK_SM), ctypes.byref(mx)) != NVML_SUCCESS:
            mx.value = 0
        reasons = None
        if self._reasons is not None:
            mask = ctypes.c_ulonglong(0)
            if self._reasons(self._dev, ctypes.byref(mask)) == NVML_SUCCESS:
                reasons = int(mask.value)
        return {"sm_clock_mhz": float(mhz.value), "max_sm_clock_mhz": float(mx.value), "reasons": reasons}
