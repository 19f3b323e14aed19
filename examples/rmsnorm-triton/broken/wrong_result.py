"""Broken: fwd forgets the weight (y = x * rstd). Rejected by the tolerance comparison of 'y'."""
import triton
import triton.language as tl

from _base import rmsnorm_bwd  # noqa: F401


@triton.jit
def _fwd_no_weight(X, W, Y, RSTD, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(X + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    tl.store(Y + row * D + cols, (x * r).to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + row, r)


def rmsnorm_fwd(x, w, y, rstd, eps):
    n, d = x.shape
    _fwd_no_weight[(n,)](x, w, y, rstd, d, eps, BLOCK_D=triton.next_power_of_2(d))
