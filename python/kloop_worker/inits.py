"""Input initialisers (docs/spec.md, "Init forms") generated with numpy.

The same forms and parameters as kloop's C++ generator (src/check/input_generator.cpp), and the
same seeds: every tensor is drawn from ``derive_seed(seed, name)``, so the job's seeds name the
same streams. The values are NOT bit-identical to the C++ generator's: the C++ side uses
xoshiro256** with its own libm-independent normal sampler, this side numpy's PCG64 and its normals.
That does not weaken the gate: the reference and the candidate run in the same worker and always
see the same values (the reference's inputs are copied to the candidate's fresh buffers), and
each seed still gives the same values on every run of the worker, so a failure replays with
``--seed``. What the gate needs from a generator is (1) values from the spec's distribution,
(2) fresh values for a seed drawn at check time, (3) reproducibility — all three hold here.

For torch tensors on a GPU, generate_torch draws the iid forms on the device instead (see its
docstring). Values come back as float64 (or int64) numpy arrays; tensors.py stores them in the tensor's
dtype (floats rounded to nearest, integers rounded half away from zero and saturated, as the
C++ store_element does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict

import numpy as np

from . import dims as dim_expr
from .protocol import MASK64

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.S)

_ARITY = {
    "normal": 2,
    "uniform": 2,
    "randint": 2,
    "const": 1,
    "logsigmoid_normal": 2,
    "cu_seqlens": 1,
    "arange": 2,
    "spike": 3,
    "int_edges": 2,
}


@dataclass
class Initializer:
    kind: str
    a: float = 0.0
    b: float = 1.0
    total: str = ""  # cu_seqlens: the total; spike: the row length (a dim expression)
    text: str = ""


def parse(text: str) -> Initializer:
    """An init string (already validated by kloop's spec loader); ValueError when malformed."""
    if not text:
        text = "normal(0, 1)"
    m = _CALL.match(text)
    if m is None:
        raise ValueError("init '%s': expected a call such as normal(0, 1)" % text)
    name, args = m.group(1), m.group(2)
    if name not in _ARITY:
        raise ValueError("init '%s': unknown form '%s'" % (text, name))
    parts = _split_args(args) if args.strip() else []
    if len(parts) != _ARITY[name]:
        raise ValueError("init '%s': %s takes %d arguments, got %d" % (text, name, _ARITY[name], len(parts)))
    if name == "cu_seqlens":
        return Initializer(kind=name, total=parts[0], text=text)
    if name == "spike":
        return Initializer(kind=name, a=float(parts[0]), b=float(parts[1]), total=parts[2], text=text)
    nums = [float(p) for p in parts]
    return Initializer(kind=name, a=nums[0], b=nums[1] if len(nums) > 1 else 0.0, text=text)


def _split_args(args: str):
    """The comma-separated arguments, split outside parentheses (a dim expression may hold
    ``min(a, b)``)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(args):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return parts


def int_edge_values(lo: int, hi: int):
    """The values int_edges(lo, hi) draws from, in kloop's order (input_generator's
    int_edge_values): lo, lo+1, -1, 0, 1, hi-1, hi, those inside [lo, hi], without repeats."""
    out = []
    for v in (lo, lo + 1, -1, 0, 1, hi - 1, hi):
        if lo <= v <= hi and v not in out:
            out.append(v)
    return out


def spike(init: Initializer, numel: int, dims: Dict[str, int], g: np.random.Generator) -> np.ndarray:
    """normal(0, std) values, then one element per row of ``row`` elements (the last row may be
    partial) set to +peak or -peak at a uniformly drawn position."""
    row = dim_expr.evaluate(init.total, dims)
    if row < 1:
        raise ValueError("init '%s': the row length evaluates to %d; it must be >= 1" % (init.text, row))
    out = _affine(g.standard_normal(numel), init.a, 0.0)
    rows = -(-numel // row)
    pos = g.integers(0, row, size=rows) + np.arange(rows, dtype=np.int64) * row
    signs = np.where(g.integers(0, 2, size=rows) == 1, -1.0, 1.0)
    keep = pos < numel
    out[pos[keep]] = signs[keep] * init.b
    return out


def _generator(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed & MASK64))


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log(sigmoid(x)) = -softplus(-x), computed without overflow."""
    y = -x
    return -(np.maximum(y, 0.0) + np.log1p(np.exp(-np.abs(y))))


def _affine(x: np.ndarray, scale: float, offset: float) -> np.ndarray:
    """offset + scale * x, in place (the same values: IEEE products and sums commute)."""
    if scale != 1.0:
        x *= scale
    if offset != 0.0:
        x += offset
    return x


def generate(init: Initializer, numel: int, is_integer_dtype: bool, dims: Dict[str, int], seed: int) -> np.ndarray:
    """``numel`` values of ``init`` for one tensor, from the tensor's own seed."""
    g = _generator(seed)
    k = init.kind
    if k == "normal":
        return _affine(g.standard_normal(numel), init.b, init.a)
    if k == "uniform":
        return _affine(g.random(numel), init.b - init.a, init.a)
    if k == "randint":
        lo, hi = int(init.a), int(init.b)
        if not hi > lo:
            raise ValueError("init '%s': randint needs lo < hi (hi is exclusive)" % init.text)
        return g.integers(lo, hi, size=numel, dtype=np.int64)
    if k == "const":
        return np.full(numel, init.a, dtype=np.float64)
    if k == "logsigmoid_normal":
        return log_sigmoid(init.a + init.b * g.standard_normal(numel))
    if k == "arange":
        return init.a + np.arange(numel, dtype=np.float64) * init.b
    if k == "cu_seqlens":
        return cu_seqlens(init, numel, dims, g)
    if k == "spike":
        return spike(init, numel, dims, g)
    if k == "int_edges":
        lo, hi = int(init.a), int(init.b)
        if not hi >= lo:
            raise ValueError("init '%s': int_edges needs lo <= hi" % init.text)
        edges = np.array(int_edge_values(lo, hi), dtype=np.int64)
        return edges[g.integers(0, len(edges), size=numel)]
    raise ValueError("init '%s': unknown form" % init.text)


# Forms drawn on the GPU for torch tensors on CUDA (generate_torch); the others (randint,
# cu_seqlens, spike, int_edges) always come from the host.
DEVICE_FORMS = ("normal", "uniform", "logsigmoid_normal", "const", "arange")


def generate_torch(init: Initializer, out, seed: int) -> bool:
    """Draw ``init`` into ``out`` (a contiguous 1-D float tensor on a CUDA device) with torch's
    generator on that device, seeded with the tensor's own seed; False (nothing written) when the
    form has no device path.

    Why: numpy's generator on the host costs ~40 ns a value on the H200's host (2.7 s for one
    16384 x 4096 tensor), and a Triton iteration draws dozens of such tensors. On the device it is
    a few milliseconds. The values differ from the host path's (Philox, not PCG64) but keep what
    the gate needs (module docstring): the spec's distribution, a fresh stream per seed, and the
    same values for a seed on every run on the same GPU and torch. Random draws are made in
    float32 (float64 for f64 tensors) and rounded to the tensor's dtype; const and arange are
    computed in float64, so they are bit-identical to the host path's.
    """
    k = init.kind
    if k not in DEVICE_FORMS:
        return False
    import torch  # only reached with torch tensors

    n = out.numel()
    draw = torch.float64 if out.dtype == torch.float64 else torch.float32
    if k == "const":
        out.fill_(init.a)
        return True
    if k == "arange":
        out.copy_(torch.arange(n, dtype=torch.float64, device=out.device).mul_(init.b).add_(init.a))
        return True
    g = torch.Generator(device=out.device)
    g.manual_seed(seed & MASK64)
    if k == "uniform":
        v = torch.rand(n, generator=g, dtype=draw, device=out.device)
        out.copy_(_affine(v, init.b - init.a, init.a))
    elif k == "normal":
        v = torch.randn(n, generator=g, dtype=draw, device=out.device)
        out.copy_(_affine(v, init.b, init.a))
    else:  # logsigmoid_normal
        v = torch.randn(n, generator=g, dtype=draw, device=out.device)
        out.copy_(torch.nn.functional.logsigmoid(_affine(v, init.b, init.a)))
    return True


def cu_seqlens(init: Initializer, numel: int, dims: Dict[str, int], g: np.random.Generator) -> np.ndarray:
    """Offsets 0 = c[0] < c[1] < ... < c[n] = total: n-1 distinct cut points, sorted."""
    if numel < 1:
        raise ValueError("init '%s': cu_seqlens needs a tensor of at least 1 element" % init.text)
    n = numel - 1
    total = dim_expr.evaluate(init.total, dims)
    if total < n:
        raise ValueError(
            "init '%s': total %d is smaller than the number of sequences %d" % (init.text, total, n)
        )
    if n == 0 and total != 0:
        raise ValueError("init '%s': one offset cannot end at total %d" % (init.text, total))
    out = np.zeros(numel, dtype=np.int64)
    if n == 0:
        return out
    if n > 1:
        cuts = g.choice(total - 1, size=n - 1, replace=False) + 1
        out[1:n] = np.sort(cuts)
    out[n] = total
    return out


def to_integer(values: np.ndarray, bits: int) -> np.ndarray:
    """Round half away from zero, NaN to 0, saturate to the integer range (store_element's rule)."""
    lo_int, hi_int = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if values.dtype.kind in "iu":
        return np.clip(values, lo_int, hi_int).astype(np.int64)
    v = np.where(np.isnan(values), 0.0, values)
    r = np.trunc(v + np.copysign(0.5, v))
    edge = float(1 << (bits - 1))  # exact in double: -edge is the minimum, edge is one past the maximum
    high = r >= edge
    low = r <= -edge
    out = np.where(high | low, 0.0, r).astype(np.int64)
    out[high] = hi_int
    out[low] = lo_int
    return out
