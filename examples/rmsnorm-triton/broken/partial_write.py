"""Broken: launches one program fewer than there are rows, so the last row of y and rstd is never
written. The NaN poison stays there: poison_unwritten_outputs."""
import triton

from _base import _fwd_kernel, _warps, rmsnorm_bwd  # noqa: F401


def rmsnorm_fwd(x, w, y, rstd, eps):
    n, d = x.shape
    block_d = triton.next_power_of_2(d)
    _fwd_kernel[(n - 1,)](x, w, y, rstd, d, eps, BLOCK_D=block_d, num_warps=_warps(block_d))
