"""kloop's bench for an FLA-style op registry: no adapter to write for a black-box op.

flash-linear-attention describes every op it benchmarks in ``benchmarks/ops/registry.py``: an
``OpConfig`` per op (``import_path``, ``func_name``, ``inputs`` as ``TensorSpec``s,
``extra_kwargs``, ``output_is_tuple``, ``skip_backward``, ``dim_constraints``,
``default_shapes``, ``test_file``), ``SHAPE_CONFIGS`` and ``generate_inputs``. This module imports
that file as it is, builds the inputs, times the op and prints kloop's black-box bench JSON
(docs/blackbox.md, "Bench output") with raw per-call samples:

    python -m kloop_worker.fla_registry --op chunk_gla [--registry benchmarks/ops/registry.py]
                                        [--modes fwd,fwdbwd] [--shapes fwd/B1_T8192_H96_D128,...]
    python -m kloop_worker.fla_registry --describe --op chunk_gla    # the op's facts, as JSON

**One side** (``KLOOP_BENCH_SIDES`` unset): the op is imported from the working directory (a copy
of the repository) and ``{"shapes": [...]}`` is printed.

**Both sides of an A/B in one process** (``KLOOP_BENCH_SIDES`` = a JSON list of
``{"name": ..., "root": ...}``): each side's package is imported from its own repository copy and
kept under its own module set (after importing a side, every module loaded from its root is moved
out of ``sys.modules``; before each call of a side its set is put back), so the two copies live
side by side under the same names. The inputs are built once per shape and passed to both sides;
the samples are taken interleaved, ABBA per sample (base, candidate; candidate, base; ...), each
after the same cache flush. Printed: ``{"sides": {"base": {"shapes": [...]}, "candidate":
{...}}, "method": "interleaved", ...}``. Where one process cannot hold both sides, it prints
``{"fallback": "<why>"}`` and exits 0, and kloop times the sides in separate processes, recording
the reason.

**Trust.** The sides share one process, so a side's code could reach the other's. What is checked
(docs/blackbox.md, "One process, two sides"): importing a side must not change the callables of
torch, torch.Tensor, torch.autograd, torch.cuda or Triton's launchers, and the threads its import
or a warm-up call starts (a library's thread pool) must go quiet and stay quiet, not a nanosecond
of CPU, to the end of the run (kloop_worker.process_threads; else fallback, with where the threads
came from; the output's ``idle_threads`` lists those that stayed); while timing, no side's module
may rebind a function or class, those shared callables must stay as they were, and no thread may
appear (else the whole run is void: exit 3 with ``{"error": ...}``). The timer's own functions are
bound before any side is imported.

Timing: on CUDA the worker's protocol (kloop_worker.timing): flush by reading 2 x L2 of zeros,
synchronize, a spin kernel holds the stream while the call is queued (sized per call from its
recent enqueue times, as the worker's next_hold_s), CUDA events around the call, synchronize. On
the CPU (no torch or no GPU): ``time.perf_counter_ns`` around the call. The stopping rule is
kloop's (kloop_worker.stopping) per side, with the ``KLOOP_BENCH_*`` hints, each side's time budget
counting the whole sample pair; both sides stop together. ``KLOOP_BENCH_ROUND_TIME_S`` bounds the
whole run: each shape's timed loop may take what is left of it over the shapes not yet run (its
max_time_s lowered to that). ``KLOOP_BENCH_EARLY_VERDICT`` (two sides only; JSON, the keys of
kloop_worker.early_verdict) stops a shape once its verdict is settled, at the early verdict's looks.
Each printed shape says how it stopped (``stop``, ``early_verdict``, ``time_cap_s``). Warm-up:
``FLA_BENCH_OP_WARMUP_ITERS`` calls per side and shape (default 5, FLA's own), so autotuning is
done before the first sample.
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any, Dict, List, Optional, Tuple

from . import early_verdict
from .process_threads import IdleThreads, StillRunning, describe_names, thread_count, thread_ids, thread_names
from .stopping import StoppingRule
from .timing import next_hold_s

_perf_ns = time.perf_counter_ns  # bound before any side's code is imported

MODE_NAMES = ("fwd", "fwdbwd")
EXIT_VOID = 3


class BenchError(Exception):
    """A problem with the op, the registry or the run: printed as {"error": ...}, exit 2."""


class VoidRun(Exception):
    """A side's code changed what the other side or the timer uses: the A/B is void (exit 3)."""


class Fallback(Exception):
    """One process cannot hold both sides: kloop times them in separate processes."""


# -- the registry ---------------------------------------------------------------------------------


def load_registry(path: str):
    """Imports the registry file under a private name (it is frozen, so each side has the same)."""
    if not os.path.isfile(path):
        raise BenchError("the registry file '%s' does not exist (option --registry)" % path)
    spec = importlib.util.spec_from_file_location("kloop_fla_registry", path)
    module = importlib.util.module_from_spec(spec)
    # run.py imports it as a top-level module `registry` next to itself; so may its own helpers.
    sys.modules["kloop_fla_registry"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise BenchError("importing the registry file '%s' failed: %s: %s" % (path, type(e).__name__, e))
    for name in ("get_op", "generate_inputs"):
        if not hasattr(module, name):
            raise BenchError("the registry file '%s' has no '%s': not an FLA-style registry" % (path, name))
    return module


def op_config(registry, op: str):
    try:
        return registry.get_op(op)
    except KeyError as e:
        raise BenchError(str(e.args[0]) if e.args else "op '%s' is not registered" % op)


def registry_shapes(registry, config) -> Dict[str, Dict[str, int]]:
    shapes = getattr(config, "default_shapes", None) or getattr(registry, "SHAPE_CONFIGS", {})
    allowed = getattr(config, "dim_constraints", None) or {}
    out = {}
    for name, dims in shapes.items():
        if all(dims.get(d) in values for d, values in allowed.items()):
            out[name] = dict(dims)
    return out


def op_modes(config, wanted: Optional[List[str]]) -> List[str]:
    modes = list(wanted) if wanted else list(MODE_NAMES)
    for m in modes:
        if m not in MODE_NAMES:
            raise BenchError("unknown mode '%s' (option --modes): FLA's modes are fwd and fwdbwd" % m)
    if getattr(config, "skip_backward", False):
        modes = [m for m in modes if m != "fwdbwd"]
    return modes


def describe(registry, config) -> Dict[str, Any]:
    """The facts `kloop new --from-fla` writes an op.toml from."""
    import_path = config.import_path
    test_file = getattr(config, "test_file", None) or "tests/ops/test_%s.py" % import_path.rsplit(".", 1)[-1]
    return {
        "name": config.name,
        "import_path": import_path,
        "func_name": getattr(config, "func_name", None) or config.name,
        "test_file": test_file,
        "package_dir": import_path.replace(".", "/"),
        "modes": op_modes(config, None),
        "shapes": sorted(registry_shapes(registry, config)),
        "inputs": sorted(getattr(config, "inputs", {})),
    }


# -- sides: one repository copy each, under its own module set -------------------------------------


def _under(path: Optional[str], root: str) -> bool:
    if not path:
        return False
    try:
        return os.path.commonpath([os.path.realpath(path), root]) == root
    except ValueError:
        return False


def _module_path(m) -> Optional[str]:
    f = getattr(m, "__file__", None)
    if f:
        return f
    p = getattr(m, "__path__", None)  # a namespace package: its first directory
    try:
        return next(iter(p)) if p is not None else None
    except (TypeError, StopIteration):
        return None


class Side:
    def __init__(self, name: str, root: str):
        self.name = name
        self.root = os.path.realpath(root)
        self.modules: Dict[str, Any] = {}
        self.fn = None

    def load(self, import_path: str, attr: str, keep_in_sys_modules: bool) -> None:
        """Imports `import_path` from this side's root and takes the modules it loaded from there
        out of sys.modules (unless it is the only side)."""
        sys.path.insert(0, self.root)
        importlib.invalidate_caches()
        try:
            module = importlib.import_module(import_path)
        except Exception as e:  # the candidate's import error: the bench of that side failed
            raise BenchError("side '%s': importing %s from %s failed: %s: %s"
                             % (self.name, import_path, self.root, type(e).__name__, e))
        finally:
            sys.path.remove(self.root)
        self.fn = getattr(module, attr, None)
        if self.fn is None:
            raise BenchError("side '%s': module %s has no '%s'" % (self.name, import_path, attr))
        self.modules = {k: m for k, m in list(sys.modules.items()) if _under(_module_path(m), self.root)}
        if not _under(_module_path(module), self.root):
            raise Fallback("side '%s': %s was imported from %s, not from the side's copy %s (an installed copy "
                           "shadows it)" % (self.name, import_path, _module_path(module), self.root))
        if not keep_in_sys_modules:
            for k in self.modules:
                del sys.modules[k]

    def activate(self, others: List["Side"]) -> None:
        """Puts this side's modules under their names (a lazy import inside a call finds them)."""
        for o in others:
            if o is not self:
                for k in o.modules:
                    if sys.modules.get(k) is o.modules[k]:
                        del sys.modules[k]
        sys.modules.update(self.modules)


def list_environment(argv: List[str]) -> None:
    """Run by a fresh interpreter (argv: root, import path, the roots as JSON): imports the op's
    module from the root and prints, as JSON, the modules that import loaded from outside every
    root, in the order they were first entered into sys.modules (a package before its
    submodules). Never returns."""
    root, path, roots = argv[0], argv[1], [os.path.realpath(r) for r in json.loads(argv[2])]
    sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
    sys.path.insert(0, root)
    before = set(sys.modules)
    try:
        importlib.import_module(path)
    except Exception:  # noqa: BLE001 - what it loaded before failing is listed all the same
        pass
    names = [n for n, m in list(sys.modules.items())
             if n not in before and not any(_under(_module_path(m), r) for r in roots)]
    sys.stdout.write("\n" + json.dumps(names) + "\n")
    sys.stdout.flush()
    os._exit(0)


# The listing interpreter's program: this package from where this process found it.
_LIST_ENVIRONMENT = ("import sys; sys.path.insert(0, %r); from kloop_worker.fla_registry import list_environment; "
                     "list_environment(sys.argv[1:])" % os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class EnvironmentImports:
    """What importing the base's package loads from outside every side's root — site-packages,
    the standard library: the environment, never a side's code — listed by a fresh interpreter
    started at once (it runs while this process imports torch), then imported here before the
    thread count and the namespaces are taken. A package whose dependencies start thread pools
    at import (FLA's import starts 31 threads on the H200 host) is then not taken for a side that
    starts threads of its own. The list comes from the side named base (the accepted code), so a
    candidate cannot widen what counts as environment: a new dependency of its own that starts
    threads still sends the A/B to separate processes."""

    def __init__(self, sides: List[Tuple[str, str]], import_path: str):
        base = next((r for n, r in sides if n == "base"), sides[0][1])
        roots = [os.path.realpath(r) for _, r in sides]
        self.error = ""
        self.names: List[str] = []
        self.imported = 0
        self.loaded = 0
        self.failed: List[str] = []  # "name (ExcType: message)", for the fallback's message
        try:
            self._dir = tempfile.mkdtemp(prefix="kloop-fla-env-")
            self._proc = subprocess.Popen([sys.executable, "-c", _LIST_ENVIRONMENT, os.path.realpath(base), import_path,
                                           json.dumps(roots)], cwd=self._dir, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except Exception as e:  # noqa: BLE001 - no list: the sides are imported as before
            self._proc = None
            self.error = "%s: %s" % (type(e).__name__, e)

    def import_them(self, timeout_s: float = 600.0) -> None:
        if self._proc is not None:
            try:
                out, _ = self._proc.communicate(timeout=timeout_s)
                lines = [line for line in out.splitlines() if line.startswith("[")]
                self.names = [str(n) for n in json.loads(lines[-1])] if lines else []
                if not lines:
                    self.error = "the listing interpreter printed no list (exit %s)" % self._proc.returncode
            except Exception as e:  # noqa: BLE001
                self._proc.kill()
                self.error = "%s: %s" % (type(e).__name__, e)
            finally:
                shutil.rmtree(self._dir, ignore_errors=True)
        # Two passes: a module imported on its own, in the listing's order, may need one listed
        # after it (a package that imports its submodules in another order than the listing
        # interpreter entered them); the second pass retries what failed in the first.
        failed: Dict[str, Exception] = {}
        for _ in range(2):
            failed = {}
            for name in self.names:
                if name in sys.modules or name == "__main__":
                    continue
                try:
                    importlib.import_module(name)
                    self.imported += 1
                except Exception as e:  # noqa: BLE001 - the side's own import will say what is wrong
                    failed[name] = e
            if not failed:
                break
        self.failed = ["%s (%s: %s)" % (n, type(e).__name__, str(e).splitlines()[0][:160] if str(e) else "")
                       for n, e in failed.items()]
        self.loaded = sum(1 for n in self.names if n in sys.modules)

    def describe(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"listed": len(self.names), "imported": self.imported, "loaded": self.loaded}
        if self.error:
            d["error"] = self.error
        if self.failed:
            d["not_imported"] = self.failed[:5]
        return d

    def missing(self) -> List[str]:
        """Listed modules that are not in sys.modules now (a module that removes itself after its
        import, or one whose import failed here)."""
        return [n for n in self.names if n not in sys.modules and n != "__main__"]


def read_sides() -> Optional[List[Tuple[str, str]]]:
    text = os.environ.get("KLOOP_BENCH_SIDES")
    if not text:
        return None
    try:
        sides = [(str(s["name"]), str(s["root"])) for s in json.loads(text)]
    except (ValueError, KeyError, TypeError) as e:
        raise BenchError("KLOOP_BENCH_SIDES must be a JSON list of {\"name\", \"root\"}: %s" % e)
    if len(sides) < 1 or len({n for n, _ in sides}) != len(sides):
        raise BenchError("KLOOP_BENCH_SIDES must name at least one side, each once")
    return sides


# -- what one process shares: watched while the sides run ------------------------------------------


def _callables_of(ns) -> Dict[str, Tuple[int, int]]:
    out = {}
    for k, v in list(vars(ns).items()):
        if callable(v) or isinstance(v, type):
            code = getattr(v, "__code__", None)
            out[k] = (id(v), id(code) if code is not None else 0)
    return out


def shared_namespaces() -> Dict[str, Any]:
    """torch's and Triton's namespaces a side could patch to slow the other side down."""
    out: Dict[str, Any] = {}
    for name in ("torch", "torch.autograd", "torch.cuda", "triton.runtime.jit", "triton.runtime.autotuner"):
        m = sys.modules.get(name)
        if m is not None:
            out[name] = m
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch.Tensor"] = torch.Tensor
    jit = sys.modules.get("triton.runtime.jit")
    if jit is not None and hasattr(jit, "JITFunction"):
        out["triton.runtime.jit.JITFunction"] = jit.JITFunction
    tuner = sys.modules.get("triton.runtime.autotuner")
    if tuner is not None and hasattr(tuner, "Autotuner"):
        out["triton.runtime.autotuner.Autotuner"] = tuner.Autotuner
    return out


def fingerprint(namespaces: Dict[str, Any]) -> Dict[str, Dict[str, Tuple[int, int]]]:
    return {name: _callables_of(ns) for name, ns in namespaces.items()}


def first_change(before, after) -> Optional[str]:
    for name, attrs in before.items():
        now = after.get(name, {})
        for k, v in attrs.items():
            if now.get(k) != v:
                return "%s.%s" % (name, k)
    return None


class ThreadOrigin:
    """While a side is imported: the first import that returned with more threads than the
    baseline — "`import numpy._core._multiarray_umath` in scipy.linalg._fblas" — so that a
    fallback names where its threads came from, not only how many (a C extension's init imports
    numpy's core right after its library, and that library's thread pool, was loaded). Every
    import statement goes through builtins.__import__; the hook is there only during the import
    and costs one directory listing per import."""

    def __init__(self, baseline: int):
        self.baseline = baseline
        self.first: Optional[Tuple[str, str]] = None
        self.chain: List[str] = []  # the imports in progress then, outermost first
        self._stack: List[str] = []
        self._orig = None

    def __enter__(self) -> "ThreadOrigin":
        self._orig = orig = builtins.__import__

        def hook(name, globals=None, locals=None, fromlist=(), level=0):
            self._stack.append(name)
            try:
                return orig(name, globals, locals, fromlist, level)
            finally:
                self._stack.pop()
                if self.first is None and thread_count() > self.baseline:
                    self.first = (name, str((globals or {}).get("__name__", "?")))
                    self.chain = list(self._stack)

        builtins.__import__ = hook
        return self

    def __exit__(self, *exc) -> None:
        builtins.__import__ = self._orig

    def describe(self) -> str:
        """"first seen after `import X` in M, while importing A > B" (the last four imports in
        progress: where an extension imported from C code, M is importlib's own frame)."""
        if self.first is None:
            return ""
        s = "first seen after `import %s` in %s" % self.first
        if self.chain:
            s += ", while importing " + " > ".join(self.chain[-4:])
        return s


def start_library_pools(torch) -> None:
    """Starts torch's own CPU thread pools before any side is imported — a CPU reduction (the
    intra-op pool), a CPU matrix product (the BLAS library's pool) and a backward (autograd's
    device threads) — so that a package whose import runs a CPU op is not taken for one that
    starts threads of its own."""
    if torch is None:
        return
    torch.ones(1 << 18).mul(2).sum()
    a = torch.ones(256, 256)
    (a @ a).sum()
    x = torch.ones(8, device="cuda" if torch.cuda.is_available() else "cpu", requires_grad=True)
    (x * 2).sum().backward()


# -- timing ---------------------------------------------------------------------------------------


class CpuClock:
    device = "cpu"

    def describe(self) -> Dict[str, Any]:
        return {"device": "cpu", "timer": "time.perf_counter_ns", "flush": "none"}

    def sample(self, call) -> float:
        t0 = _perf_ns()
        call()
        return (_perf_ns() - t0) * 1e-9


class CudaClock:
    device = "cuda"

    def __init__(self, torch):
        self.torch = torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.name = props.name
        l2 = int(getattr(props, "L2_cache_size", 0) or 0) or (64 << 20)
        self.flush_bytes = 2 * l2
        self._flush = torch.zeros(self.flush_bytes // 8, dtype=torch.int64, device="cuda")
        self.mhz = float(getattr(props, "clock_rate", 0) or 0) / 1000.0 or 1980.0
        # Bound now: a side that patches torch.cuda later cannot change what times it.
        self._event = torch.cuda.Event
        self._record = torch.cuda.Event.record
        self._elapsed = torch.cuda.Event.elapsed_time
        self._sync = torch.cuda.synchronize
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self._stream = torch.cuda.default_stream()
        self._enqueue: Dict[int, Any] = {}  # per call: its recent enqueue times
        self.holds_timed_out = 0

    def describe(self) -> Dict[str, Any]:
        return {"device": "cuda", "name": self.name, "timer": "torch.cuda.Event pair, synchronize per sample",
                "flush": "read of %d bytes of zeros before every call" % self.flush_bytes,
                "hold": ("torch.cuda._sleep, per call twice the median of its last 16 enqueue times plus 20 us "
                         "(50 us to 50 ms)") if self._sleep else "none",
                "holds_timed_out": self.holds_timed_out}

    def sample(self, call) -> float:
        """One sample. The hold covers the call's queueing — a forward plus autograd's backward
        takes far longer to queue than a forward — so its launch overhead stays outside the
        interval (kloop_worker.timing.next_hold_s); a call queued for longer than the hold is
        counted in holds_timed_out."""
        recent = self._enqueue.setdefault(id(call), deque(maxlen=16))
        hold = next_hold_s(recent)
        self._flush.amax()
        self._sync()
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        if self._sleep is not None:
            self._sleep(int(hold * self.mhz * 1e6))  # holds the stream while the call is queued
        self._record(start)
        t0 = _perf_ns()
        call()
        queued = (_perf_ns() - t0) * 1e-9
        self._record(end, self._stream)
        self._sync()
        recent.append(queued)
        if self._sleep is not None and queued > hold:
            self.holds_timed_out += 1
        return self._elapsed(start, end) * 1e-3


def stop_hints(cap_s: Optional[float] = None) -> Dict[str, Any]:
    """The stopping rule's hints; ``cap_s``: this shape's share of the run's time budget, which
    lowers its max_time_s (and min_time_s with it) but never its min_samples."""
    env = os.environ
    hints = {
        "min_samples": int(env.get("KLOOP_BENCH_MIN_SAMPLES", "10")),
        "min_time_s": float(env.get("KLOOP_BENCH_MIN_TIME_S", "0.5")),
        "max_time_s": float(env.get("KLOOP_BENCH_MAX_TIME_S", "15")),
        "target_rel_stdev": float(env.get("KLOOP_BENCH_TARGET_RSD", "0.005")),
    }
    if cap_s is not None:
        hints["max_time_s"] = min(hints["max_time_s"], cap_s)
        hints["min_time_s"] = min(hints["min_time_s"], hints["max_time_s"])
    return hints


def env_number(name: str, minimum: float, maximum: float) -> Optional[float]:
    text = os.environ.get(name, "")
    if not text:
        return None
    try:
        v = float(text)
    except ValueError:
        raise BenchError("%s='%s' is not a number" % (name, text))
    if not (minimum <= v <= maximum):
        raise BenchError("%s=%s is outside [%g, %g]" % (name, text, minimum, maximum))
    return v


def early_verdict_config() -> Optional[Dict[str, Any]]:
    """KLOOP_BENCH_EARLY_VERDICT: kloop's early-verdict settings for a two-sided run (JSON, the
    keys of kloop_worker.early_verdict), or None."""
    text = os.environ.get("KLOOP_BENCH_EARLY_VERDICT", "")
    if not text:
        return None
    try:
        cfg = json.loads(text)
    except ValueError:
        raise BenchError("KLOOP_BENCH_EARLY_VERDICT is not JSON: %s" % text[:80])
    if not isinstance(cfg, dict):
        raise BenchError("KLOOP_BENCH_EARLY_VERDICT must be a JSON object")
    return cfg


class RoundBudget:
    """KLOOP_BENCH_ROUND_TIME_S: the wall time of one run's shapes (inputs, warm-up, samples),
    shared out as it goes — each shape's timed loop may use what is left over the shapes not yet
    run, so a shape that stops early leaves its time to the next. None: no budget."""

    def __init__(self, total_s: Optional[float], shapes: int):
        self.total_s = total_s
        self.left = shapes
        self.start = _perf_ns()

    def next_cap_s(self) -> Optional[float]:
        if self.total_s is None:
            return None
        spent = (_perf_ns() - self.start) * 1e-9
        cap = max(0.0, self.total_s - spent) / max(1, self.left)
        self.left -= 1
        return cap


# -- the op's calls --------------------------------------------------------------------------------


def make_inputs(registry, config, dims: Dict[str, int], torch) -> Dict[str, Any]:
    B, T, H, D = dims["B"], dims["T"], dims["H"], dims["D"]
    extra = {k: v for k, v in dims.items() if k not in ("B", "T", "H", "D")}
    if torch is not None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        return registry.generate_inputs(config, B, T, H, D, dtype=torch.bfloat16, device=device, **extra)
    return registry.generate_inputs(config, B, T, H, D, **extra)


def make_call(side: Side, config, inputs, mode: str, grad_out):
    kwargs = dict(getattr(config, "extra_kwargs", {}) or {})
    fn = side.fn
    if mode == "fwd":
        return lambda: fn(**inputs, **kwargs)
    tuple_out = getattr(config, "output_is_tuple", True)

    def fwdbwd():
        out = fn(**inputs, **kwargs)
        (out[0] if tuple_out else out).backward(grad_out)

    return fwdbwd


def clear_grads(inputs) -> None:
    for t in inputs.values():
        if getattr(t, "grad", None) is not None:
            t.grad = None


def bench_shape(sides: List[Side], config, inputs, mode: str, clock, warmup: int,
                guard: Optional["Guard"], cap_s: Optional[float] = None,
                early: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, List[float]], Dict[str, Any]]:
    """Warm-up of every side, then samples interleaved ABBA until every side's rule says stop —
    within ``cap_s`` of sample time per side when given — or, with ``early`` and two sides named
    base and candidate, until the samples settle the verdict (kloop_worker.early_verdict: at its
    looks only, after its minimum time). Returns the samples per side and how the shape stopped."""
    grad_out = None
    if mode == "fwdbwd":
        sides[0].activate(sides)
        out = sides[0].fn(**inputs, **dict(getattr(config, "extra_kwargs", {}) or {}))
        t = out[0] if getattr(config, "output_is_tuple", True) else out
        grad_out = t.detach().clone().normal_()
        if guard is not None:
            guard.ran_own(sides[0])
    calls = [make_call(s, config, inputs, mode, grad_out) for s in sides]
    for s, call in zip(sides, calls):
        s.activate(sides)
        for _ in range(warmup):
            clear_grads(inputs)
            call()
            if guard is not None:
                guard.ran_own(s)
    hints = stop_hints(cap_s)
    rules = [StoppingRule(hints) for _ in sides]
    samples: List[List[float]] = [[] for _ in sides]
    names = [s.name for s in sides]
    judge = early is not None and sorted(names) == ["base", "candidate"]
    stop: Dict[str, Any] = {}
    i = 0
    while not all(r.done for r in rules):
        order = range(len(sides)) if i % 2 == 0 else reversed(range(len(sides)))
        pair: List[float] = [0.0] * len(sides)
        t_pair = _perf_ns()
        for k in order:
            sides[k].activate(sides)
            clear_grads(inputs)
            pair[k] = clock.sample(calls[k])
        # Every side's time budget counts the whole pair: a fast side paired with a slow one
        # reaches its minimum time as soon as the slow one (and never runs the pair for minutes).
        cost = (_perf_ns() - t_pair) * 1e-9
        for k, dt in enumerate(pair):
            if not rules[k].done:
                rules[k].add(dt, cost)
            samples[k].append(dt * 1e3)
        i += 1
        if guard is not None and (i % 16 == 0 or all(r.done for r in rules)):
            guard.check("the timed calls of %s" % mode)
        if judge and early_verdict.is_look(i, early) and i >= hints["min_samples"] and \
                min(r.total_s for r in rules) >= float(early.get("min_time_s", 0.1)):
            b, c = samples[names.index("base")], samples[names.index("candidate")]
            settled = early_verdict.settled_verdict(b, c, early)
            if settled is not None:
                if guard is not None:
                    guard.check("the timed calls of %s" % mode)
                stop = {"stop": "early_verdict", "early_verdict": settled}
                break
    if not stop:
        stop = {"stop": "+".join(sorted({r.state for r in rules}))}
    if cap_s is not None:
        stop["time_cap_s"] = round(cap_s, 6)
    return {s.name: v for s, v in zip(sides, samples)}, stop


class Guard:
    """What the sides of one process must leave alone (see the module's docstring, "Trust")."""

    def __init__(self, sides: List[Side]):
        self.sides = sides
        self.shared = fingerprint(shared_namespaces())
        self.threads = thread_count()  # the baseline of the next import's ThreadOrigin
        self.idle = IdleThreads(thread_ids())
        self.own: Dict[str, Any] = {}

    def _adopt(self, during: str, origin: str = "") -> None:
        """Threads started during `during` may stay if they go quiet (kloop_worker.process_threads)."""
        new = self.idle.unknown()
        if new:
            try:
                self.idle.adopt(during, origin)
            except StillRunning as e:
                raise Fallback("%s started %d thread(s) (%s%s) and %s: they would run beside the other side's calls"
                               % (during, len(new), describe_names(thread_names(new)), "; " + origin if origin else "", e))
        self.threads = thread_count()

    def _idle_still(self, during: str) -> None:
        ran = self.idle.first_run()
        if ran:
            raise Fallback("a thread that was idle ran during %s: %s (the sides are timed in separate processes)"
                           % (during, ran))

    def loaded(self, side: Side, origin: str = "") -> None:
        """After a side's import: nothing shared changed, no earlier side's module was touched, the
        threads it started (``origin``: where the first was seen, ThreadOrigin.describe) are idle."""
        self._adopt("importing side '%s'" % side.name, origin)
        self._idle_still("importing side '%s'" % side.name)
        changed = first_change(self.shared, fingerprint(shared_namespaces()))
        if changed:
            raise Fallback("importing side '%s' changed %s" % (side.name, changed))
        self.check_sides("importing side '%s'" % side.name)
        self.own[side.name] = fingerprint(side.modules)

    def ran_own(self, side: Side) -> None:
        """After a warm-up call of `side`: its own modules may have changed (lazy set-up); no other's."""
        self.check_sides("a warm-up call of side '%s'" % side.name, skip=side)
        self._idle_still("a warm-up call of side '%s'" % side.name)
        self._adopt("a warm-up call of side '%s'" % side.name)
        self.own[side.name] = fingerprint(side.modules)

    def check_sides(self, during: str, skip: Optional[Side] = None) -> None:
        for s in self.sides:
            if s is skip or s.name not in self.own:
                continue
            changed = first_change(self.own[s.name], fingerprint(s.modules))
            if changed:
                raise VoidRun("side '%s': '%s' was rebound during %s: one side's code changed the other's"
                              % (s.name, changed, during))

    def check(self, during: str) -> None:
        """While timing: nothing may change, not even a side's own modules; no thread may appear,
        and none of the idle ones may run."""
        self.check_sides(during)
        changed = first_change(self.shared, fingerprint(shared_namespaces()))
        if changed:
            raise VoidRun("'%s' was rebound during %s: a side's code changed what the other (or the timer) "
                          "calls" % (changed, during))
        new = self.idle.unknown()
        if new:
            raise VoidRun("%d thread(s) appeared during %s (%s): a side's code runs beside the other's calls"
                          % (len(new), during, describe_names(thread_names(new))))
        self._idle_still(during)


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m kloop_worker.fla_registry", description=__doc__.split("\n\n")[0])
    p.add_argument("--op", required=True, help="the registry's op name, e.g. chunk_gla")
    p.add_argument("--registry", default="benchmarks/ops/registry.py",
                   help="the registry file, relative to the (first) side's root")
    p.add_argument("--modes", default="", help="comma-separated: fwd,fwdbwd (default both; fwd for skip_backward)")
    p.add_argument("--shapes", default="", help="comma-separated mode/name keys (default $KLOOP_BENCH_SHAPES, "
                                                 "else every registry shape in every mode)")
    p.add_argument("--describe", action="store_true", help="print the op's facts as JSON and exit")
    return p.parse_args(argv)


def wanted_keys(args, registry, config) -> List[Tuple[str, str, Dict[str, int]]]:
    shapes = registry_shapes(registry, config)
    modes = op_modes(config, [m for m in args.modes.split(",") if m] or None)
    text = args.shapes or os.environ.get("KLOOP_BENCH_SHAPES", "")
    keys = [k for k in text.split(",") if k] or ["%s/%s" % (m, n) for m in modes for n in shapes]
    out = []
    for key in keys:
        mode, _, name = key.partition("/")
        if not name or mode not in modes:
            raise BenchError("shape '%s': expected mode/name with a mode of %s" % (key, ",".join(modes)))
        if name not in shapes:
            raise BenchError("shape '%s': '%s' is not a shape of op '%s' (%s)" % (key, name, config.name,
                                                                                ", ".join(sorted(shapes))))
        out.append((mode, name, shapes[name]))
    return out


def load_sides(sides: List[Side], config, attr: str, guard: Optional["Guard"]) -> None:
    """Imports each side's package from its root (guarded with two sides)."""
    for k, s in enumerate(sides):
        origin = ThreadOrigin(guard.threads if guard is not None else 1 << 30)
        try:
            with origin:
                s.load(config.import_path, attr, keep_in_sys_modules=guard is None)
        except BenchError as e:
            if k == 0:
                raise
            # The first side imported: the package may not import twice in one process (e.g. a
            # torch.library registration). Separate processes tell a broken side apart.
            raise Fallback("importing side '%s' after side '%s' failed in one process: %s"
                           % (s.name, sides[0].name, e))
        if guard is not None:
            guard.loaded(s, origin.describe())


def run(args) -> Dict[str, Any]:
    named = read_sides()
    sides = [Side(n, r) for n, r in (named or [("candidate", os.getcwd())])]
    environment = None
    for s in sides:
        if not os.path.isdir(s.root):
            raise BenchError("side '%s': root '%s' is not a directory" % (s.name, s.root))
    reg_paths = [os.path.join(s.root, args.registry) for s in sides]
    texts = []
    for p in reg_paths:
        if not os.path.isfile(p):
            raise BenchError("the registry file '%s' does not exist (option --registry)" % p)
        with open(p, "rb") as f:
            texts.append(f.read())
    if any(t != texts[0] for t in texts):
        raise BenchError("the registry file differs between the sides: freeze %s" % args.registry)
    # Where the op is imported from: never the working directory or an earlier side's root.
    sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
    registry = load_registry(reg_paths[0])
    config = op_config(registry, args.op)
    if args.describe:
        return describe(registry, config)
    keys = wanted_keys(args, registry, config)
    if named is not None and len(sides) > 1:
        environment = EnvironmentImports([(sd.name, sd.root) for sd in sides], config.import_path)

    try:
        import torch  # noqa: F401 -- FLA's registry needs it; a numpy registry does not
    except ImportError:
        torch = None
    clock = CudaClock(torch) if torch is not None and torch.cuda.is_available() else CpuClock()
    if torch is not None:
        try:
            import triton  # noqa: F401 -- imported before the sides, so its namespace is watched
        except ImportError:
            pass
    start_library_pools(torch)  # before the thread count
    if environment is not None:
        environment.import_them()
    guard = Guard(sides) if len(sides) > 1 else None
    attr = getattr(config, "func_name", None) or config.name
    try:
        load_sides(sides, config, attr, guard)
    except Fallback as e:
        if environment is None:
            raise
        env = environment.describe()
        missing = environment.missing()
        raise Fallback("%s (with %d of the %d environment modules the base's import loads in place before it%s%s%s)"
                       % (e, env["loaded"], env["listed"], "; " + env["error"] if "error" in env else "",
                          "; not in place: " + ", ".join(missing[:5]) if missing else "",
                          "; failed here: " + "; ".join(env["not_imported"]) if "not_imported" in env else ""))
    warmup = max(1, int(os.environ.get("FLA_BENCH_OP_WARMUP_ITERS", "5")))

    budget = RoundBudget(env_number("KLOOP_BENCH_ROUND_TIME_S", 0.0, 86400.0), len(keys))
    early = early_verdict_config() if guard is not None else None
    results: Dict[str, List[Dict[str, Any]]] = {s.name: [] for s in sides}
    for mode, name, dims in keys:
        cap = budget.next_cap_s()
        inputs = make_inputs(registry, config, dims, torch)
        per_side, stop = bench_shape(sides, config, inputs, mode, clock, warmup, guard, cap, early)
        for s in sides:
            results[s.name].append(dict({"mode": mode, "name": name, "samples_ms": per_side[s.name]}, **stop))
        del inputs
    if named is None:
        return {"shapes": results["candidate"], "device": clock.describe()}
    doc = {"sides": {n: {"shapes": v} for n, v in results.items()},
           "method": "interleaved" if len(sides) > 1 else "single",
           "order": "ABBA per sample" if len(sides) > 1 else "", "device": clock.describe()}
    if environment is not None:
        doc["environment_imports"] = environment.describe()
    if guard is not None and guard.idle.notes:
        doc["idle_threads"] = guard.idle.notes
    return doc


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        doc = run(args)
    except Fallback as e:
        print(json.dumps({"fallback": str(e)}))
        return 0
    except VoidRun as e:
        print(json.dumps({"error": str(e), "void": True}))
        return EXIT_VOID
    except BenchError as e:
        print(json.dumps({"error": str(e)}))
        print("kloop_worker.fla_registry: " + str(e), file=sys.stderr)
        return 2
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
