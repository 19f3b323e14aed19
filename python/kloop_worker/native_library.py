"""Native candidates of a Python op: a shared library kloop built from a ``.cu`` or C++ source,
called through kloop's C ABI (include/kloop/kernel.h) on the worker's own tensors.

kloop builds the source as the native backends do (nvcc, or the C++ compiler; the build cache,
the ptxas report) and copies the library into the Python build's cache entry; the manifest names
that copy (``snapshot``) and its SHA-256 (``native_sha256``). Loading reads the copy, checks the
hash and ``dlopen``s it; each mode's entry is the exported ``extern "C" int <entry>(const kl_args*)``
a native op's candidate exports, so one ``.cu`` file serves a ``backend = "cuda"`` op and a Python
op with the same tensors alike.

A call passes every input and output of the call plan in the spec's order (``kl_tensor``: name,
data pointer, dtype, device, shape, strides in elements), the params (both views) and the dims,
and the stream: the current CUDA stream for torch tensors on the GPU (the timer's start event is
recorded on it), NULL on the host. What the plan fixes (names, shapes, params, dims) is built once
per bound entry; before the timed window a call only sets the data pointers, and no buffer is
held alive by a callee. The timed call is one ctypes call. A non-zero return value is the call's return code, as
from a Python entry.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from typing import Any, Dict, List

from .protocol import CallPlan

ABI_VERSION = 1  # KL_ABI_VERSION
MAX_DIMS = 8  # KL_MAX_DIMS

_DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5}
_HOST, _CUDA = 0, 1


class KlTensor(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("device", ctypes.c_int),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    ]


class KlParam(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("f64", ctypes.c_double), ("i64", ctypes.c_int64)]


class KlDim(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class KlArgs(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("n_inputs", ctypes.c_int32),
        ("inputs", ctypes.POINTER(KlTensor)),
        ("n_outputs", ctypes.c_int32),
        ("outputs", ctypes.POINTER(KlTensor)),
        ("n_params", ctypes.c_int32),
        ("params", ctypes.POINTER(KlParam)),
        ("n_dims", ctypes.c_int32),
        ("dims", ctypes.POINTER(KlDim)),
        ("stream", ctypes.c_void_p),
    ]


def is_native(manifest: Dict[str, Any]) -> bool:
    return bool(manifest.get("native"))


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class NativeLibrary:
    """A loaded library: its entries looked up by name (``entry``), None when not exported."""

    def __init__(self, manifest: Dict[str, Any], load_error):
        path = manifest["snapshot"]
        want = manifest.get("native_sha256", "")
        try:
            got = sha256_of(path)
        except OSError as e:
            raise load_error("cannot read the library '%s': %s" % (path, e)) from e
        if not want or got != want:
            raise load_error(
                "the library '%s' is not the one kloop built (SHA-256 %s, recorded %s)" % (path, got, want or "none")
            )
        try:
            # RTLD_LOCAL: two libraries of one A/B (base and candidate, in their own hosts anyway)
            # never resolve each other's symbols.
            self.lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOW", 2) | getattr(ctypes, "RTLD_LOCAL", 0))
        except OSError as e:
            raise load_error("cannot load '%s' (built from %s): %s" % (path, os.path.basename(manifest["source"]), e)) from e
        self.path = path

    def entry(self, name: str):
        try:
            fn = getattr(self.lib, name)
        except AttributeError:
            return None
        fn.argtypes = [ctypes.POINTER(KlArgs)]
        fn.restype = ctypes.c_int
        return fn


class NativeArguments:
    """The kl_args of one call plan and everything its pointers point into (kept alive here).
    Names, dtypes, shapes, strides, params and dims are the plan's and are set once; a call sets
    only the tensors' data pointers (``point_at``) and the stream."""

    def __init__(self, plan: CallPlan, backend):
        self._names = []  # the byte strings the structs point at
        self._plans = list(plan.inputs) + list(plan.outputs)
        self._is_torch = backend.is_torch
        self.inputs = self._tensors(plan.inputs, backend)
        self.outputs = self._tensors(plan.outputs, backend)
        self._slots = [self.inputs[i] for i in range(len(plan.inputs))] + \
                      [self.outputs[i] for i in range(len(plan.outputs))]
        self.params = (KlParam * max(1, len(plan.params)))()
        for i, p in enumerate(plan.params):
            self.params[i] = KlParam(self._name(p.name), float(p.value), int(p.value))
        dims = sorted(plan.dims.items())
        self.dims = (KlDim * max(1, len(dims)))()
        for i, (k, v) in enumerate(dims):
            self.dims[i] = KlDim(self._name(k), int(v))
        self.args = KlArgs(ABI_VERSION, len(plan.inputs), self.inputs, len(plan.outputs), self.outputs,
                           len(plan.params), self.params, len(dims), self.dims, None)
        self.on_cuda = backend.is_cuda
        self.torch = backend.torch if backend.is_torch else None

    def point_at(self, views: Dict[str, Any]) -> "NativeArguments":
        """The data pointers of one argument set (the worker's views by name)."""
        for t, k in zip(self._plans, self._slots):
            v = views[t.name]
            k.data = v.data_ptr() if self._is_torch else v.ctypes.data
        return self

    def _name(self, s: str) -> bytes:
        b = s.encode("utf-8")
        self._names.append(b)
        return b

    def _tensors(self, plans, backend):
        arr = (KlTensor * max(1, len(plans)))()
        for i, t in enumerate(plans):
            if len(t.shape) > MAX_DIMS:
                raise ValueError("tensor '%s' has %d dims; the C ABI takes at most %d" % (t.name, len(t.shape), MAX_DIMS))
            k = arr[i]
            k.name = self._name(t.name)
            k.dtype = _DTYPES[t.dtype]
            k.device = _CUDA if backend.is_cuda else _HOST
            k.ndim = len(t.shape)
            stride = 1
            for d in range(len(t.shape) - 1, -1, -1):  # row-major contiguous, in elements
                k.shape[d] = int(t.shape[d])
                k.strides[d] = stride
                stride *= int(t.shape[d])
        return arr


class NativeCallee:
    """One exported entry bound to one call plan: the candidate.Callee interface (``kwargs``,
    ``invoke``, ``finish``) for a native library. A host makes one call at a time, so the
    callee's one kl_args is re-pointed per call."""

    def __init__(self, fn, plan: CallPlan, backend, manifest: Dict[str, Any], files: List[str]):
        self.fn = fn
        self.plan = plan
        self.backend = backend
        self.manifest = manifest
        self.files = files
        self._args = NativeArguments(plan, backend)

    def kwargs(self, bufs) -> NativeArguments:
        return self._args.point_at(bufs.tensors())

    def invoke(self, a: NativeArguments):
        if a.on_cuda:
            a.args.stream = a.torch.cuda.current_stream().cuda_stream or None
        return self.fn(ctypes.byref(a.args))

    def finish(self, ret, bufs) -> int:
        return int(ret)
