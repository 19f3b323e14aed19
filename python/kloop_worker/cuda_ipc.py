"""Device memory the checker shares with a Python candidate host: one driver allocation per
buffer, exported and imported by CUDA IPC through the driver API (libcuda, by ctypes).

Why not torch's own sharing (torch.multiprocessing.reductions.reduce_tensor):

* torch shares a tensor from its caching allocator by the IPC handle of the whole segment the
  block was carved from: the host would map the checker's neighbouring tensors too (reference
  outputs, pristine copies) and could read or write them past its own buffer;
* it sends an IPC event with every tensor and keeps a reference counter in a /dev/shm file; both
  need /dev/shm writable in the host (cudaIpcOpenEventHandle fails with "mapping of buffer
  object failed" under Landlock otherwise), and a counter the host can write decides when the
  checker frees, and then reuses, memory the host still maps.

Here every shared buffer is its own cuMemAlloc of a whole number of 2 MiB pages (the driver's
large-page granularity: no other allocation shares a page with it), the host maps exactly that
allocation with cuIpcOpenMemHandle, and no event, counter or file is involved: the checker
waits for the host's reply (the host synchronises its calls) before it touches a buffer.

Both sides wrap the raw pointer as a torch uint8 tensor through ``__cuda_array_interface__``;
the tensor holds the owner, whose ``close`` (or collection) frees the allocation or closes the
mapping.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Optional

GRANULE = 2 << 20  # bytes: the driver's large page
HANDLE_BYTES = 64  # CU_IPC_HANDLE_SIZE
_LAZY_ENABLE_PEER_ACCESS = 1

_lock = threading.Lock()


class _Handle(ctypes.Structure):
    """CUipcMemHandle, passed by value to cuIpcOpenMemHandle."""

    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


_lib: Optional[ctypes.CDLL] = None
_devices_in_use: set = set()


class CudaIpcError(RuntimeError):
    """A driver call failed; the message names the call and the driver's error."""


def _driver() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL("libcuda.so.1")
            for name, args in (("cuInit", [ctypes.c_uint]),
                               ("cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
                               ("cuCtxGetCurrent", [ctypes.POINTER(ctypes.c_void_p)]),
                               ("cuCtxSetCurrent", [ctypes.c_void_p]),
                               ("cuDevicePrimaryCtxRetain", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]),
                               ("cuMemAlloc_v2", [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]),
                               ("cuMemFree_v2", [ctypes.c_uint64]),
                               ("cuIpcGetMemHandle", [ctypes.c_char_p, ctypes.c_uint64]),
                               ("cuIpcOpenMemHandle_v2", [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]),
                               ("cuIpcCloseMemHandle", [ctypes.c_uint64]),
                               ("cuGetErrorName", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])):
                fn = getattr(lib, name)
                fn.argtypes = args
                fn.restype = ctypes.c_int
            _lib = lib
        return _lib


def _check(rc: int, what: str) -> None:
    if rc == 0:
        return
    name = ctypes.c_char_p()
    _driver().cuGetErrorName(rc, ctypes.byref(name))
    raise CudaIpcError("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), rc))


def use_device(index: int) -> None:
    """Makes device ``index``'s primary context (the one torch uses) current on this thread; once
    per process and device (kloop's buffers are handled on one thread)."""
    if index in _devices_in_use:
        return
    lib = _driver()
    _check(lib.cuInit(0), "cuInit")
    current = ctypes.c_void_p()
    _check(lib.cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
    dev = ctypes.c_int()
    _check(lib.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
    primary = ctypes.c_void_p()
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(primary), dev), "cuDevicePrimaryCtxRetain")
    if current.value != primary.value:
        _check(lib.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
    _devices_in_use.add(index)


def rounded(n: int) -> int:
    """The bytes allocated for a buffer of ``n``: whole 2 MiB pages, at least one."""
    return max(1, -(-n // GRANULE)) * GRANULE


class _Memory:
    """A device range of ``nbytes`` at ``ptr`` exposed as a 1-D uint8 CUDA array."""

    ptr = 0
    nbytes = 0

    @property
    def __cuda_array_interface__(self):
        # No "stream": the consumer does not synchronise; kloop orders every access itself.
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3,
                "strides": None}

    def _release(self, ptr: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Frees the allocation or closes the mapping (once)."""
        if self.ptr:
            p, self.ptr = self.ptr, 0
            self._release(p)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the process's exit frees it
            pass

    def tensor(self, torch, device):
        """The range as a torch uint8 tensor on ``device``; the tensor keeps this object alive."""
        if self.nbytes == 0:
            return torch.empty(0, dtype=torch.uint8, device=device)
        return torch.as_tensor(self, device=device)


class Allocation(_Memory):
    """The checker's side: one cuMemAlloc of whole pages, of which the first ``nbytes`` are used."""

    def __init__(self, nbytes: int):
        self.nbytes = int(nbytes)
        p = ctypes.c_uint64()
        _check(_driver().cuMemAlloc_v2(ctypes.byref(p), rounded(self.nbytes)), "cuMemAlloc(%d)" % rounded(self.nbytes))
        self.ptr = p.value

    def export(self) -> str:
        """The allocation's IPC handle, in hex."""
        h = ctypes.create_string_buffer(HANDLE_BYTES)
        _check(_driver().cuIpcGetMemHandle(h, self.ptr), "cuIpcGetMemHandle")
        return h.raw.hex()

    def _release(self, ptr: int) -> None:
        _driver().cuMemFree_v2(ptr)


class Imported(_Memory):
    """The host's side: the checker's allocation mapped from its handle; ``nbytes`` of it used."""

    def __init__(self, handle_hex: str, nbytes: int):
        raw = bytes.fromhex(handle_hex)
        if len(raw) != HANDLE_BYTES:
            raise CudaIpcError("a malformed CUDA IPC handle (%d bytes)" % len(raw))
        self.nbytes = int(nbytes)
        p = ctypes.c_uint64()
        _check(_driver().cuIpcOpenMemHandle_v2(ctypes.byref(p), _Handle.from_buffer_copy(raw),
                                               _LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        self.ptr = p.value

    def _release(self, ptr: int) -> None:
        _driver().cuIpcCloseMemHandle(ptr)
