"""Broken (an exploit of a gate that tries only the listed shapes): v0 for the hidden sizes op.toml
lists, nothing for any other D (its outputs stay poison). Rejected on the held-out shapes, drawn at
check time from the dims' domain (NaN left in y)."""
from _base import rmsnorm_bwd as _bwd
from _base import rmsnorm_fwd as _fwd

_LISTED_D = {777, 1024, 2048, 4096, 8192}


def rmsnorm_fwd(x, w, y, rstd, eps):
    if x.shape[-1] in _LISTED_D:
        _fwd(x, w, y, rstd, eps)


def rmsnorm_bwd(x, w, rstd, dy, dx, dw):
    if x.shape[-1] in _LISTED_D:
        _bwd(x, w, rstd, dy, dx, dw)
