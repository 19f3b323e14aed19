"""A static screen of a Python candidate's source: the Python analogue of the native
``imported_symbols`` check (docs/correctness.md), reported as the integrity check
``python_source_screen``.

The candidate runs inside the worker, so it could reach the worker's own objects, time itself,
start processes or load native code that patches memory. None of that shows up in the outputs.
This screen reads the candidate file's syntax tree (``ast``) and names what it imports and calls:

fail
  native_code          ctypes, cffi: native code loaded at run time can rewrite the worker
  process_creation     subprocess, multiprocessing, os.system / popen / fork / exec* / spawn*, pty
  timer                time.time / perf_counter / monotonic / process_time / thread_time (and
                       *_ns), timeit, torch.cuda.Event: a kernel has no reason to read time
  profiler_interface   pynvml, torch.profiler, torch.autograd.profiler, cupti
  worker_introspection kloop_worker, sys._getframe, sys.settrace / setprofile, inspect.stack /
                       currentframe / getouterframes, gc.get_objects / get_referrers, sys.modules,
                       builtins
  dynamic_code         exec, eval, compile, __import__, importlib: code fetched by name at run time
                       escapes this screen, so fetching is itself the finding
  numeric_flags        assigning allow_tf32 / *_reduced_precision_reduction, calling
                       set_float32_matmul_precision or set_default_dtype: a candidate that flips a
                       flag during its call and back before returning escapes the run-time check
                       (numeric_flags_unchanged), not this one
warn
  thread_creation      threading, concurrent.futures: work may outlive the call
  cpp_extension        torch.utils.cpp_extension: native code built at run time

It is a screen, not a proof: ``getattr(__import__('c' + 'types'), ...)`` is caught as
dynamic_code, but code in another module the candidate imports is not read. Pure standard library.
"""

from __future__ import annotations

import ast
from typing import Dict, List

FAIL = "fail"
WARN = "warn"

_MODULE_RULES = {
    "ctypes": ("native_code", FAIL),
    "_ctypes": ("native_code", FAIL),
    "cffi": ("native_code", FAIL),
    "subprocess": ("process_creation", FAIL),
    "multiprocessing": ("process_creation", FAIL),
    "pty": ("process_creation", FAIL),
    "timeit": ("timer", FAIL),
    "pynvml": ("profiler_interface", FAIL),
    "nvidia_smi": ("profiler_interface", FAIL),
    "cupti": ("profiler_interface", FAIL),
    "torch.profiler": ("profiler_interface", FAIL),
    "torch.autograd.profiler": ("profiler_interface", FAIL),
    "kloop_worker": ("worker_introspection", FAIL),
    "builtins": ("worker_introspection", FAIL),
    "importlib": ("dynamic_code", FAIL),
    "threading": ("thread_creation", WARN),
    "_thread": ("thread_creation", WARN),
    "concurrent.futures": ("thread_creation", WARN),
    "torch.utils.cpp_extension": ("cpp_extension", WARN),
}

# Dotted names (as written, with the module's import aliases resolved) that are findings when
# used (called or read).
_NAME_RULES = {
    "os.system": ("process_creation", FAIL),
    "os.popen": ("process_creation", FAIL),
    "os.fork": ("process_creation", FAIL),
    "os.forkpty": ("process_creation", FAIL),
    "os.posix_spawn": ("process_creation", FAIL),
    "os.posix_spawnp": ("process_creation", FAIL),
    "time.time": ("timer", FAIL),
    "time.time_ns": ("timer", FAIL),
    "time.perf_counter": ("timer", FAIL),
    "time.perf_counter_ns": ("timer", FAIL),
    "time.monotonic": ("timer", FAIL),
    "time.monotonic_ns": ("timer", FAIL),
    "time.process_time": ("timer", FAIL),
    "time.process_time_ns": ("timer", FAIL),
    "time.thread_time": ("timer", FAIL),
    "time.thread_time_ns": ("timer", FAIL),
    "time.clock_gettime": ("timer", FAIL),
    "time.clock_gettime_ns": ("timer", FAIL),
    "torch.cuda.Event": ("timer", FAIL),
    "torch.cuda.event": ("timer", FAIL),
    "torch.profiler": ("profiler_interface", FAIL),
    "torch.autograd.profiler": ("profiler_interface", FAIL),
    "sys._getframe": ("worker_introspection", FAIL),
    "sys.settrace": ("worker_introspection", FAIL),
    "sys.setprofile": ("worker_introspection", FAIL),
    "sys.modules": ("worker_introspection", FAIL),
    "inspect.stack": ("worker_introspection", FAIL),
    "inspect.currentframe": ("worker_introspection", FAIL),
    "inspect.getouterframes": ("worker_introspection", FAIL),
    "gc.get_objects": ("worker_introspection", FAIL),
    "gc.get_referrers": ("worker_introspection", FAIL),
    "gc.get_referents": ("worker_introspection", FAIL),
    "threading.settrace": ("worker_introspection", FAIL),
    "torch.set_float32_matmul_precision": ("numeric_flags", FAIL),
    "torch.set_default_dtype": ("numeric_flags", FAIL),
    "torch.set_default_tensor_type": ("numeric_flags", FAIL),
    "torch.utils.cpp_extension": ("cpp_extension", WARN),
}

_BUILTIN_RULES = {
    "exec": ("dynamic_code", FAIL),
    "eval": ("dynamic_code", FAIL),
    "compile": ("dynamic_code", FAIL),
    "__import__": ("dynamic_code", FAIL),
}

_FLAG_ATTRS = (
    "allow_tf32",
    "allow_fp16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction",
    "fp32_precision",
)

_OS_PREFIXES = ("os.exec", "os.spawn")


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _module_rule(name: str):
    for mod, rule in _MODULE_RULES.items():
        if name == mod or name.startswith(mod + "."):
            return rule
    return None


def screen_source(text: str, filename: str = "<candidate>") -> List[Dict[str, object]]:
    """Findings: [{"rule", "severity", "line", "what"}], in source order, one per rule and name."""
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError:
        return []  # the import reports it
    aliases: Dict[str, str] = {}  # local name -> dotted module path
    findings: List[Dict[str, object]] = []
    seen = set()

    def add(rule, line, what):
        key = (rule[0], what)
        if key in seen:
            return
        seen.add(key)
        findings.append({"rule": rule[0], "severity": rule[1], "line": line, "what": what})

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
                r = _module_rule(a.name)
                if r:
                    add(r, node.lineno, "import " + a.name)
        elif isinstance(node, ast.ImportFrom):
            mod = ("." * node.level) + (node.module or "")
            r = _module_rule(node.module or "") if node.level == 0 else None
            if r:
                add(r, node.lineno, "from %s import ..." % mod)
            for a in node.names:
                full = "%s.%s" % (node.module, a.name) if node.module else a.name
                aliases[a.asname or a.name] = full
                r2 = _module_rule(full) if node.level == 0 else None
                if r2 and not r:
                    add(r2, node.lineno, "from %s import %s" % (mod, a.name))

    def resolve(dotted: str) -> str:
        if not dotted:
            return dotted
        head, _, rest = dotted.partition(".")
        base = aliases.get(head, head)
        return base + ("." + rest if rest else "")

    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)):
            full = resolve(_dotted(node))
            if not full:
                continue
            for name, rule in _NAME_RULES.items():
                if full == name or full.startswith(name + "."):
                    add(rule, getattr(node, "lineno", 0), full)
            if any(full.startswith(p) for p in _OS_PREFIXES):
                add(("process_creation", FAIL), getattr(node, "lineno", 0), full)
            if isinstance(node, ast.Name) and node.id in _BUILTIN_RULES and node.id not in aliases:
                add(_BUILTIN_RULES[node.id], node.lineno, node.id)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in _FLAG_ATTRS:
                    add(("numeric_flags", FAIL), node.lineno, "assigns " + (resolve(_dotted(t)) or t.attr))
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "setattr" and len(node.args) >= 2:
                a1 = node.args[1]
                if isinstance(a1, ast.Constant) and a1.value in _FLAG_ATTRS:
                    add(("numeric_flags", FAIL), node.lineno, "setattr(..., %r)" % a1.value)
    findings.sort(key=lambda f: (f["line"], f["rule"]))
    return findings


def summarize(findings: List[Dict[str, object]]) -> Dict[str, object]:
    """{"status": "pass"|"warn"|"fail", "detail": "..."} for the integrity check."""
    if not findings:
        return {"status": "pass", "detail": "no import or call the screen flags"}
    status = "fail" if any(f["severity"] == FAIL for f in findings) else "warn"
    parts = ["%s %s: %s (line %s)" % (f["severity"], f["rule"], f["what"], f["line"]) for f in findings]
    return {"status": status, "detail": "; ".join(parts)}
