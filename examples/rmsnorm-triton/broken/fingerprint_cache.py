"""Broken (an exploit of inputs that change all at once): replays the outputs it cached under a
fingerprint of 64 evenly spaced elements of x and of w (gathered by a Triton kernel: no ATen
kernel for the census to see), computing only on a miss. Rejected: the checks change a few
scattered elements between calls, so a hit returns outputs stale at those rows, which a checked
timed call finds (timed_output_checks)."""
import torch
import triton
import triton.language as tl

from _base import rmsnorm_bwd  # noqa: F401
from _base import rmsnorm_fwd as _fwd

_cache = {}


@triton.jit
def _gather(P, N, OUT, K: tl.constexpr):
    i = tl.arange(0, K)
    idx = (i.to(tl.int64) * (N - 1)) // (K - 1)
    tl.store(OUT + i, tl.load(P + idx).to(tl.float32))


def _sample(a):
    out = torch.empty(64, dtype=torch.float32, device=a.device)
    _gather[(1,)](a, a.numel(), out, K=64)
    return out.cpu().numpy().tobytes()


def rmsnorm_fwd(x, w, y, rstd, eps):
    key = (tuple(x.shape), _sample(x), _sample(w))
    hit = _cache.get(key)
    if hit is not None:
        y.copy_(hit[0])
        rstd.copy_(hit[1])
        return
    _fwd(x, w, y, rstd, eps)
    _cache[key] = (y.clone(), rstd.clone())
