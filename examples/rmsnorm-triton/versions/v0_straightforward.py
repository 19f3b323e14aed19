"""v0 — the straightforward Triton RMSNorm.

fwd: one program per row; the whole row (BLOCK_D = next power of two >= D) in registers, fp32
math, one store of y and rstd. bwd: one program per row for dx; dw by a second kernel, one
program per block of 64 columns looping over all N rows. Simple and correct; the dw kernel has
only D/64 programs (16 for D = 1024), so it leaves most of the GPU idle on large N.

Candidate form: the entry functions of op.toml (rmsnorm_fwd, rmsnorm_bwd), tensors by name,
outputs written in place. Addresses are 64-bit (row * D overflows int32 past 2^31 elements).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(X, W, Y, RSTD, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(X + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * D + cols, (x * r * w).to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + row, r)


@triton.jit
def _bwd_dx_kernel(X, W, RSTD, DY, DX, D, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(X + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(RSTD + row)
    g = dy * w
    c = tl.sum(g * x, axis=0) / D
    dx = r * g - x * (r * r * r) * c
    tl.store(DX + row * D + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _bwd_dw_kernel(X, RSTD, DY, DW, N, D, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < D
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        rows = start + tl.arange(0, BLOCK_N)
        rmask = rows < N
        offs = rows.to(tl.int64)[:, None] * D + cols[None, :]
        m = rmask[:, None] & cmask[None, :]
        x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
        dy = tl.load(DY + offs, mask=m, other=0.0).to(tl.float32)
        r = tl.load(RSTD + rows, mask=rmask, other=0.0)
        acc += tl.sum(dy * x * r[:, None], axis=0)
    tl.store(DW + cols, acc.to(DW.dtype.element_ty), mask=cmask)


def _warps(block_d):
    return 4 if block_d <= 2048 else 8 if block_d <= 4096 else 16


def rmsnorm_fwd(x, w, y, rstd, eps):
    n, d = x.shape
    block_d = triton.next_power_of_2(d)
    _fwd_kernel[(n,)](x, w, y, rstd, d, eps, BLOCK_D=block_d, num_warps=_warps(block_d))


def rmsnorm_bwd(x, w, rstd, dy, dx, dw):
    n, d = x.shape
    block_d = triton.next_power_of_2(d)
    _bwd_dx_kernel[(n,)](x, w, rstd, dy, dx, d, BLOCK_D=block_d, num_warps=_warps(block_d))
    block_c = 64
    _bwd_dw_kernel[(triton.cdiv(d, block_c),)](x, rstd, dy, dw, n, d, BLOCK_N=32, BLOCK_C=block_c, num_warps=4)
