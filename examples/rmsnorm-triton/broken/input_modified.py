"""Broken: computes y right but also writes it over x (an in-place kernel on a tensor the spec
says is read-only). Rejected by inputs_unchanged."""
import triton
import triton.language as tl

from _base import _warps, rmsnorm_bwd  # noqa: F401


@triton.jit
def _fwd_in_place(X, W, Y, RSTD, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(X + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    y = (x * r * w).to(Y.dtype.element_ty)
    tl.store(Y + row * D + cols, y, mask=mask)
    tl.store(X + row * D + cols, y, mask=mask)
    tl.store(RSTD + row, r)


def rmsnorm_fwd(x, w, y, rstd, eps):
    n, d = x.shape
    block_d = triton.next_power_of_2(d)
    _fwd_in_place[(n,)](x, w, y, rstd, d, eps, BLOCK_D=block_d, num_warps=_warps(block_d))
