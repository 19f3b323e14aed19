"""Broken (an exploit of unchecked calls): right values, but past its 150th call in this process
(beyond the gate's count) it changes one element of x on every third call, after the real work,
betting that only checked calls have their inputs compared. Rejected: every input is compared
with its pristine copy after every call (inputs_unchanged)."""
import triton
import triton.language as tl

from _base import rmsnorm_bwd  # noqa: F401
from _base import rmsnorm_fwd as _fwd

calls = 0


@triton.jit
def _poke(P, AT):
    v = tl.load(P + AT)
    tl.store(P + AT, (v.to(tl.float32) + 1.0).to(P.dtype.element_ty))


def rmsnorm_fwd(x, w, y, rstd, eps):
    global calls
    calls += 1
    _fwd(x, w, y, rstd, eps)
    if calls > 150 and calls % 3 == 0:
        _poke[(1,)](x, 1)
