"""Loading candidates and references and calling them: the two candidate forms, return values,
exceptions and numeric flags.

A library is a *manifest* kloop wrote when it "built" the source (src/backend/python): a JSON
file naming the source, the snapshot of its bytes that is actually imported (so the code run is
the code hashed, whatever happens to the file meanwhile), a module name and the candidate's own
Triton cache directory.

Candidate forms (docs/python.md):

* **entry form** — a function named like the mode's ``entry`` (``rmsnorm_fwd``) taking the spec's
  inputs and outputs by name, as the native ABI gets them; params and dims are passed when the
  function names them (or takes ``**kwargs``). It writes its outputs in place and returns None
  (or 0; another int is a return code), or it returns its outputs (one array, a tuple in the
  spec's output order, or a dict by name), which kloop copies into the guarded outputs.
* **seed form** — ``setup(**dims, seed)`` returning ``{"inputs": {...}, "outputs": [...]}`` and
  ``run_kernel(**inputs)``. ``setup`` is called once per mode × shape to check the interface
  (input names, shapes and dtypes must be the spec's); the values it returns are discarded:
  kloop's seeded inputs are what run_kernel gets. Outputs named in ``setup()["outputs"]`` are
  preallocated (poisoned, red-zoned) and passed by name; the others are returned by run_kernel.
  A spec with several modes passes ``mode=<name>`` to both (they must accept it).

The reference is always the entry form, looked up by ``reference_entry``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import numbers
import os
import sys
import traceback
from typing import Any, Dict, List, Optional

from .native_library import NativeCallee, NativeLibrary, is_native
from .protocol import CallPlan


class LoadError(Exception):
    """The library cannot be used at all (import failure, missing function): a fatal event."""


class OutputError(Exception):
    """A call returned something that cannot be its outputs."""


# ---- manifests and modules -------------------------------------------------------------------


def read_manifest(path: str) -> Dict[str, Any]:
    try:
        with open(path, "r", encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise LoadError("cannot read the library manifest '%s': %s" % (path, e)) from e
    for key in ("source", "snapshot", "module"):
        if key not in m:
            raise LoadError("library manifest '%s' has no '%s'" % (path, key))
    return m


def use_caches(manifest: Dict[str, Any]) -> None:
    """Point Triton's (and inductor's) caches at this library's own directory. Set before the
    module is imported and before each of its calls: Triton reads TRITON_CACHE_DIR when it
    compiles, which happens at a kernel's first call."""
    d = manifest.get("triton_cache_dir")
    if d:
        os.environ["TRITON_CACHE_DIR"] = d
    d = manifest.get("inductor_cache_dir")
    if d:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = d


def import_library(manifest: Dict[str, Any]):
    """Import the snapshot under the manifest's module name; the source's directory goes on
    sys.path so the candidate can import its sibling modules. A native library (built from a
    ``.cu`` or C++ source) is loaded instead: native_library.py."""
    use_caches(manifest)
    if is_native(manifest):
        return NativeLibrary(manifest, LoadError)
    src_dir = os.path.dirname(os.path.abspath(manifest["source"]))
    if src_dir not in sys.path:
        sys.path.insert(0, src_dir)
    name = manifest["module"]
    path = manifest["snapshot"]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError("cannot import '%s'" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - a candidate's import may raise anything
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        traceback.print_exc()
        raise LoadError(
            "cannot import '%s': %s" % (os.path.basename(manifest["source"]), describe_exception(e, [path])["text"])
        ) from e
    return module


def _files_of(manifest: Dict[str, Any]) -> List[str]:
    return [manifest["snapshot"], os.path.abspath(manifest["source"])]


def describe_exception(exc: BaseException, files: List[str]) -> Dict[str, Any]:
    """The traceback's last line and the innermost frame in one of ``files``."""
    message = str(exc).strip()
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    last = type(exc).__name__ + (": " + first if first else "")
    if len(last) > 400:
        last = last[:397] + "..."
    where = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        fname = frame.f_code.co_filename
        if fname in files or any(os.path.dirname(f) and fname.startswith(os.path.dirname(f) + os.sep) for f in files[1:]):
            where = {"file": os.path.basename(fname), "line": lineno, "function": frame.f_code.co_name}
    text = last
    if where is not None:
        text += " (at %s:%d in %s)" % (where["file"], where["line"], where["function"])
    tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"type": type(exc).__name__, "message": first, "where": where, "text": text, "traceback": tail[-4000:]}


# ---- signatures ------------------------------------------------------------------------------


class _Signature:
    def __init__(self, fn):
        self.names = set()
        self.required = set()
        self.var_kw = False
        self.known = True
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            self.known = False
            self.var_kw = True
            return
        for p in sig.parameters.values():
            if p.kind == inspect.Parameter.VAR_KEYWORD:
                self.var_kw = True
            elif p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
                self.names.add(p.name)
                if p.default is inspect.Parameter.empty:
                    self.required.add(p.name)

    def accepts(self, name: str) -> bool:
        return self.var_kw or name in self.names


def _fn_label(fn, file: str) -> str:
    return "%s() in %s" % (getattr(fn, "__name__", "function"), os.path.basename(file))


# ---- callees -----------------------------------------------------------------------------------


class Callee:
    """One function bound to one call plan. ``kwargs`` builds the arguments for a set of buffers,
    ``invoke`` is the call itself (what is timed), ``finish`` turns its return value into a
    return code, copying returned outputs into the guarded ones."""

    def __init__(self, plan: CallPlan, backend, manifest: Dict[str, Any]):
        self.plan = plan
        self.backend = backend
        self.manifest = manifest
        self.files = _files_of(manifest)
        self.returned_outputs = [t.name for t in plan.outputs]  # outputs a return value may carry

    def kwargs(self, bufs) -> Dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def invoke(self, kwargs: Dict[str, Any]):  # pragma: no cover - overridden
        raise NotImplementedError

    def finish(self, ret, bufs) -> int:
        if ret is None:
            return 0
        if isinstance(ret, bool):
            raise OutputError("returned %r (return None, an int return code or the outputs)" % ret)
        if isinstance(ret, numbers.Integral):  # int, numpy integer scalars
            return int(ret)
        names = self.returned_outputs
        if isinstance(ret, dict):
            unknown = [k for k in ret if k not in names]
            if unknown:
                raise OutputError("returned outputs %s that are not among %s" % (unknown, names))
            pairs = list(ret.items())
        elif isinstance(ret, (tuple, list)):
            if len(ret) != len(names):
                raise OutputError("returned %d values; the outputs to return are %s" % (len(ret), names))
            pairs = list(zip(names, ret))
        else:
            if len(names) != 1:
                raise OutputError("returned one value; the outputs to return are %s" % names)
            pairs = [(names[0], ret)]
        by_name = {t.name: (t, b) for t, b in zip(self.plan.outputs, bufs.outputs)}
        for name, value in pairs:
            t, buf = by_name[name]
            self._check_returned(t, buf, value)
            self.backend.copy(buf.view, value)
        return 0

    def _check_returned(self, t, buf, value) -> None:
        b = self.backend
        shape = tuple(getattr(value, "shape", ()))
        if not hasattr(value, "shape"):
            raise OutputError("returned %s for output '%s', not an array" % (type(value).__name__, t.name))
        if tuple(shape) != tuple(t.shape):
            raise OutputError("returned '%s' with shape %s; the spec says %s" % (t.name, list(shape), t.shape))
        if b.is_torch:
            torch = b.torch
            if not isinstance(value, torch.Tensor):
                raise OutputError("returned '%s' as %s; torch tensors are expected" % (t.name, type(value).__name__))
            if value.dtype != b.torch_dtype(t.dtype):
                raise OutputError("returned '%s' as %s; the spec says %s" % (t.name, value.dtype, t.dtype))
            if value.device.type != b.device.type:
                raise OutputError("returned '%s' on %s; the tensors live on %s" % (t.name, value.device, b.device))
        else:
            import numpy as np

            if not isinstance(value, np.ndarray):
                raise OutputError("returned '%s' as %s; numpy arrays are expected" % (t.name, type(value).__name__))
            if value.dtype != b.np_dtype(t.dtype):
                raise OutputError("returned '%s' as %s; the spec says %s" % (t.name, value.dtype, t.dtype))


class EntryCallee(Callee):
    """A function taking the spec's tensors (and params, dims) by name."""

    def __init__(self, fn, plan: CallPlan, backend, manifest, what: str):
        super().__init__(plan, backend, manifest)
        self.fn = fn
        sig = _Signature(fn)
        label = _fn_label(fn, manifest["source"])
        for t in plan.inputs + plan.outputs:
            if not sig.accepts(t.name):
                raise LoadError(
                    "%s does not take the %s '%s' (the %s of mode '%s' gets every input and output by name)"
                    % (label, "input" if t in plan.inputs else "output", t.name, what, plan.mode)
                )
        self._extras: Dict[str, Any] = {}
        for k, v in plan.dims.items():
            if sig.accepts(k) and (k in sig.names or sig.var_kw):
                self._extras[k] = v
        for p in plan.params:
            if sig.accepts(p.name):
                self._extras[p.name] = p.python_value
        tensor_names = {t.name for t in plan.inputs + plan.outputs}
        missing = [n for n in sig.required if n not in tensor_names and n not in self._extras]
        if missing:
            raise LoadError(
                "%s requires %s, which mode '%s' does not provide (tensors: %s; params: %s; dims: %s)"
                % (label, missing, plan.mode, sorted(tensor_names), [p.name for p in plan.params], sorted(plan.dims))
            )
        if not sig.var_kw:
            self._extras = {k: v for k, v in self._extras.items() if k in sig.names}

    def kwargs(self, bufs) -> Dict[str, Any]:
        kw = dict(self._extras)
        kw.update(bufs.tensors())
        return kw

    def invoke(self, kwargs):
        return self.fn(**kwargs)


def _dtype_name(value) -> str:
    s = str(getattr(value, "dtype", "?"))
    return s.replace("torch.", "")


_DTYPE_SPELLINGS = {
    "f32": ("float32",),
    "f64": ("float64",),
    "f16": ("float16",),
    "bf16": ("bfloat16",),
    "i32": ("int32",),
    "i64": ("int64",),
}


class SeedCallee(Callee):
    """setup(**dims, seed) + run_kernel(**inputs): the interface of the seed's kernel.py."""

    def __init__(self, setup, run_kernel, plan: CallPlan, backend, manifest, modes: List[str]):
        super().__init__(plan, backend, manifest)
        self.fn = run_kernel
        file = os.path.basename(manifest["source"])
        setup_sig, run_sig = _Signature(setup), _Signature(run_kernel)
        self.pass_mode = len(modes) > 1
        if self.pass_mode and not (setup_sig.accepts("mode") and run_sig.accepts("mode")):
            raise LoadError(
                "%s uses setup()/run_kernel() but the spec has modes %s: both must take a `mode` argument "
                "(or define the entry functions %s)" % (file, modes, "/".join("<entry of %s>" % m for m in modes))
            )
        setup_kw: Dict[str, Any] = dict(plan.dims)
        setup_kw["seed"] = 1
        if self.pass_mode:
            setup_kw["mode"] = plan.mode
        try:
            got = setup(**setup_kw)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            traceback.print_exc()
            raise LoadError(
                "setup() of %s failed for %s: %s" % (file, plan.label, describe_exception(e, self.files)["text"])
            ) from e
        if not isinstance(got, dict) or not isinstance(got.get("inputs"), dict):
            raise LoadError("setup() of %s must return {'inputs': {...}, 'outputs': [...]}" % file)
        ins = got["inputs"]
        want = [t.name for t in plan.inputs]
        if sorted(ins) != sorted(want):
            raise LoadError(
                "setup() of %s returns inputs %s for %s; the spec's inputs are %s" % (file, sorted(ins), plan.label, want)
            )
        for t in plan.inputs:
            v = ins[t.name]
            shape = list(getattr(v, "shape", []))
            if shape != list(t.shape):
                raise LoadError(
                    "setup() of %s gives input '%s' the shape %s for %s; the spec says %s" % (file, t.name, shape, plan.label, t.shape)
                )
            if _dtype_name(v) not in _DTYPE_SPELLINGS[t.dtype]:
                raise LoadError(
                    "setup() of %s gives input '%s' the dtype %s; the spec says %s" % (file, t.name, _dtype_name(v), t.dtype)
                )
        outs = got.get("outputs", []) or []
        if isinstance(outs, dict):
            outs = list(outs)
        out_names = [t.name for t in plan.outputs]
        for name in outs:
            if name not in out_names:
                raise LoadError("setup() of %s lists output '%s'; the spec's outputs are %s" % (file, name, out_names))
        del got, ins
        self.preallocated = [n for n in out_names if n in outs]
        self.returned_outputs = [n for n in out_names if n not in outs]
        for name in want + self.preallocated:
            if not run_sig.accepts(name):
                raise LoadError("run_kernel() of %s does not take '%s'" % (file, name))
        self._extras: Dict[str, Any] = {}
        for p in plan.params:
            if p.name in run_sig.names:
                self._extras[p.name] = p.python_value
        if self.pass_mode:
            self._extras["mode"] = plan.mode

    def kwargs(self, bufs) -> Dict[str, Any]:
        kw = dict(self._extras)
        views = bufs.tensors()
        for t in self.plan.inputs:
            kw[t.name] = views[t.name]
        for name in self.preallocated:
            kw[name] = views[name]
        return kw

    def invoke(self, kwargs):
        return self.fn(**kwargs)


def bind_candidate(module, manifest, plan: CallPlan, backend, modes: List[str]) -> Callee:
    file = os.path.basename(manifest["source"])
    if isinstance(module, NativeLibrary):
        fn = module.entry(plan.entry)
        if fn is None:
            raise LoadError(
                "%s exports no function '%s' (the entry of mode '%s': extern \"C\" int %s(const kl_args*))"
                % (file, plan.entry, plan.mode, plan.entry)
            )
        return NativeCallee(fn, plan, backend, manifest, _files_of(manifest))
    fn = getattr(module, plan.entry, None)
    if callable(fn):
        return EntryCallee(fn, plan, backend, manifest, "entry")
    setup, run = getattr(module, "setup", None), getattr(module, "run_kernel", None)
    if callable(setup) and callable(run):
        return SeedCallee(setup, run, plan, backend, manifest, modes)
    raise LoadError(
        "%s has no function '%s' (the entry of mode '%s') and no setup()/run_kernel() pair" % (file, plan.entry, plan.mode)
    )


def bind_reference(module, manifest, plan: CallPlan, backend) -> Callee:
    fn = getattr(module, plan.reference_entry, None)
    if not callable(fn):
        raise LoadError(
            "the reference %s has no function '%s' (reference_entry of mode '%s')"
            % (os.path.basename(manifest["source"]), plan.reference_entry, plan.mode)
        )
    return EntryCallee(fn, plan, backend, manifest, "reference_entry")


# ---- numeric flags -----------------------------------------------------------------------------


class NumericFlags:
    """torch's global numeric switches, set identically before every reference and candidate
    call and checked unchanged after every candidate call (integrity check
    ``numeric_flags_unchanged``). TF32 is off unless the spec's ``[python] allow_tf32``."""

    def __init__(self, torch, allow_tf32: bool):
        self.torch = torch
        self.allow_tf32 = allow_tf32
        self._items = []  # (name, getter, setter, expected)
        t = torch

        def add(name, getter, setter, expected=None):
            try:
                current = getter()
            except Exception:
                return
            self._items.append([name, getter, setter, current if expected is None else expected])

        def set_attr(obj, attr):
            return lambda v: setattr(obj, attr, v)

        new_api = hasattr(t.backends, "fp32_precision") or hasattr(t.backends.cuda.matmul, "fp32_precision")
        if new_api:
            # torch >= 2.9: the fp32_precision tree. The legacy getters may raise once it is used
            # ("mix of the legacy and new APIs"), so only the new one is read; a candidate that
            # sets allow_tf32 through the legacy API changes these values too.
            mode = "tf32" if allow_tf32 else "ieee"
            for owner, label in ((t.backends, "torch.backends"), (t.backends.cuda.matmul, "torch.backends.cuda.matmul"),
                                 (getattr(t.backends, "cudnn", None), "torch.backends.cudnn"),
                                 (getattr(getattr(t.backends, "cudnn", None), "conv", None), "torch.backends.cudnn.conv"),
                                 (getattr(getattr(t.backends, "cudnn", None), "rnn", None), "torch.backends.cudnn.rnn")):
                if owner is not None and hasattr(owner, "fp32_precision"):
                    add(label + ".fp32_precision", (lambda o=owner: o.fp32_precision), set_attr(owner, "fp32_precision"), mode)
        else:
            add("torch.backends.cuda.matmul.allow_tf32", lambda: t.backends.cuda.matmul.allow_tf32,
                set_attr(t.backends.cuda.matmul, "allow_tf32"), bool(allow_tf32))
            add("torch.backends.cudnn.allow_tf32", lambda: t.backends.cudnn.allow_tf32,
                set_attr(t.backends.cudnn, "allow_tf32"), bool(allow_tf32))
            add("torch.get_float32_matmul_precision()", t.get_float32_matmul_precision,
                t.set_float32_matmul_precision, "high" if allow_tf32 else "highest")
        add("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
            lambda: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
            set_attr(t.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"))
        add("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
            lambda: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            set_attr(t.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"))
        add("torch.get_default_dtype()", t.get_default_dtype, t.set_default_dtype, t.float32)
        self.apply()

    def expected(self) -> Dict[str, Any]:
        return {name: str(exp) for name, _, _, exp in self._items}

    def apply(self) -> None:
        for _, _, setter, exp in self._items:
            try:
                setter(exp)
            except Exception:
                pass

    def changed(self) -> List[Dict[str, Any]]:
        out = []
        for name, getter, _, exp in self._items:
            try:
                now = getter()
            except Exception as e:  # a flag that cannot be read any more is a change too
                now = "unreadable (%s)" % e
            if now != exp:
                out.append({"name": name, "expected": str(exp), "actual": str(now)})
        return out


class NoFlags:
    """numpy tensors: no global numeric switches to hold."""

    def expected(self) -> Optional[Dict[str, Any]]:
        return None

    def apply(self) -> None:
        pass

    def changed(self) -> List[Dict[str, Any]]:
        return []
