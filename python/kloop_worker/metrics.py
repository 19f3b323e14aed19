"""Per-output comparison metrics: the Python twin of check::compare_outputs.

The same fields with the same definitions (docs/correctness.md, "Comparison and tolerances"),
written in the same JSON form (non-finite doubles as "nan"/"inf"/"-inf"), so kloop's tolerance
judge (src/check/tolerance_judge) decides a Python candidate's outputs by the code that decides
a native one's. Floats are compared in float64 after an exact conversion (on the GPU for torch
tensors); integer outputs take |o - r| exactly in integers, on the host. Sums are float64
reductions rather than Neumaier's compensated loop: the difference is far below any tolerance.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from .protocol import Tolerance, json_number


class _NumpyOps:
    def __init__(self):
        self.isfinite = np.isfinite
        self.isnan = np.isnan
        self.abs = np.abs
        self.where = np.where

    @staticmethod
    def count(mask) -> int:
        return int(np.count_nonzero(mask))

    @staticmethod
    def first(mask) -> int:
        return int(np.argmax(mask)) if mask.size and mask.any() else -1

    @staticmethod
    def max_or_zero(x) -> float:
        return float(x.max()) if x.size else 0.0

    @staticmethod
    def sum(x) -> float:
        return float(x.sum())


class _TorchOps:
    def __init__(self, torch):
        self.t = torch
        self.isfinite = torch.isfinite
        self.isnan = torch.isnan
        self.abs = torch.abs

    def where(self, cond, a, b):
        t = self.t
        if not isinstance(b, t.Tensor):
            b = t.tensor(b, dtype=a.dtype, device=a.device) if isinstance(a, t.Tensor) else b
        return t.where(cond, a, b)

    def count(self, mask) -> int:
        return int(mask.sum().item())

    def first(self, mask) -> int:
        if mask.numel() == 0 or not bool(mask.any().item()):
            return -1
        return int(mask.to(self.t.uint8).argmax().item())

    @staticmethod
    def max_or_zero(x) -> float:
        return float(x.max().item()) if x.numel() else 0.0

    @staticmethod
    def sum(x) -> float:
        return float(x.sum().item())


def _float_metrics(ops, o, r, tol: Tolerance, integer_diff=None) -> Dict[str, Any]:
    n = int(o.shape[0])
    o_fin = ops.isfinite(o)
    r_fin = ops.isfinite(r)
    o_nan = ops.isnan(o)
    nan_count = ops.count(o_nan)
    inf_count = ops.count(~o_fin & ~o_nan)
    first_nonfinite = ops.first(~o_fin)
    ref_nonfinite = ops.count(~r_fin)

    both = o_fin & r_fin
    zero = 0.0
    if integer_diff is not None:
        diff = ops.where(both, integer_diff, zero)
    else:
        diff = ops.where(both, ops.abs(o - r), zero)
    ar = ops.where(both, ops.abs(r), zero)
    max_abs = ops.max_or_zero(diff)
    rel_ok = both & (ar != 0)
    rel = ops.where(rel_ok, diff / ops.where(rel_ok, ar, 1.0), zero)
    max_rel = ops.max_or_zero(rel)
    d2 = ops.sum(diff * diff)
    r2 = ops.sum(ops.where(both, r * r, zero))

    # mismatches: reference non-finite and the output not the same value; or output non-finite
    # and the reference finite; or, when atol/rtol are given, |o - r| > atol + rtol |r|.
    same_nonfinite = ops.where(ops.isnan(r), o_nan, o == r)
    bad = (~r_fin & ~same_nonfinite) | (r_fin & ~o_fin)
    if tol.has_elementwise:
        atol = tol.atol or 0.0
        rtol = tol.rtol or 0.0
        bad = bad | (both & (diff > atol + rtol * ar))
    mismatches = ops.count(bad)
    first_bad = ops.first(bad)

    if r2 == 0.0:
        rel_rms = 0.0 if d2 == 0.0 else float("inf")
    else:
        rel_rms = float(np.sqrt(d2 / r2))
    return {
        "n": n,
        "max_abs": json_number(max_abs),
        "max_rel": json_number(max_rel),
        "rel_rms": json_number(rel_rms),
        "mismatches": mismatches,
        "first_bad": first_bad,
        "nan_count": nan_count,
        "inf_count": inf_count,
        "first_nonfinite": first_nonfinite,
        "ref_nonfinite": ref_nonfinite,
    }


def compare(out_buf, ref_buf, tol: Tolerance) -> Dict[str, Any]:
    """Metrics of one output (GuardedBuffer) against the reference's (GuardedBuffer)."""
    backend = out_buf.backend
    dtype = out_buf.dtype
    if dtype in ("i32", "i64"):
        np_int = np.int32 if dtype == "i32" else np.int64
        o_int = np.asarray(backend.to_host(out_buf.data)).view(np_int).astype(np.int64)
        r_int = np.asarray(backend.to_host(ref_buf.data)).view(np_int).astype(np.int64)
        ou, ru = o_int.astype(np.uint64), r_int.astype(np.uint64)
        exact = np.where(o_int >= r_int, ou - ru, ru - ou).astype(np.float64)
        with np.errstate(all="ignore"):
            return _float_metrics(_NumpyOps(), o_int.astype(np.float64), r_int.astype(np.float64), tol, exact)
    o = backend.as_f64(out_buf.data, dtype).reshape(-1)
    r = backend.as_f64(ref_buf.data, dtype).reshape(-1)
    ops = _TorchOps(backend.torch) if backend.is_torch else _NumpyOps()
    with np.errstate(all="ignore"):  # inf - inf and the like are excluded by the masks
        return _float_metrics(ops, o, r, tol)


def compare_outputs(cand, ref) -> list:
    """compare_json: every output of ``cand`` against ``ref`` (CallBuffers), plus the
    reference's own non-finite count (a broken reference must not pass silently)."""
    outs = []
    for t, o, r in zip(cand.plan.outputs, cand.outputs, ref.outputs):
        m = compare(o, r, t.tol)
        outs.append({"name": t.name, "metrics": m, "reference_nonfinite": m["ref_nonfinite"]})
    return outs
