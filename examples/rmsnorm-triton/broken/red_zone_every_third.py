"""Broken (an exploit of unchecked calls): right values, but past its 150th call in this process
(beyond the gate's count) it stores one bf16 past the end of y on every third call, betting that
only checked calls have their red zones read. Rejected: red zones are checked after every call
(red_zones)."""
import triton
import triton.language as tl

from _base import rmsnorm_bwd  # noqa: F401
from _base import rmsnorm_fwd as _fwd

calls = 0


@triton.jit
def _poke(P, AT):
    tl.store(P + AT, tl.zeros([1], dtype=tl.float32).to(P.dtype.element_ty).sum(axis=0))


def rmsnorm_fwd(x, w, y, rstd, eps):
    global calls
    calls += 1
    _fwd(x, w, y, rstd, eps)
    if calls > 150 and calls % 3 == 0:
        _poke[(1,)](y, y.numel())
