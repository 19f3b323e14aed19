"""Broken: right values, but the last program stores one bf16 past the end of y (an off-by-one
mask). Rejected by red_zones."""
import triton
import triton.language as tl

from _base import _warps, rmsnorm_bwd  # noqa: F401


@triton.jit
def _fwd_overrun(X, W, Y, RSTD, N, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(X + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * D + cols, (x * r * w).to(Y.dtype.element_ty), mask=mask)
    last = row == N - 1
    tl.store(Y + row * D + cols, tl.zeros([BLOCK_D], dtype=tl.float32).to(Y.dtype.element_ty), mask=last & (cols == D))
    tl.store(RSTD + row, r)


def rmsnorm_fwd(x, w, y, rstd, eps):
    n, d = x.shape
    block_d = triton.next_power_of_2(d + 1)
    _fwd_overrun[(n,)](x, w, y, rstd, n, d, eps, BLOCK_D=block_d, num_warps=_warps(block_d))
