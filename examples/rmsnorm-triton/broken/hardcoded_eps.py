"""Broken (an exploit of a gate that tries only the listed param value): v0 with eps forced to
1e-6, op.toml's value, whatever the call passes. Rejected on the held-out shapes, which run with
an eps drawn from param_domain: the near-zero rows (rstd ~ 1/sqrt(eps)) show any other eps."""
from _base import rmsnorm_bwd  # noqa: F401
from _base import rmsnorm_fwd as _fwd


def rmsnorm_fwd(x, w, y, rstd, eps):
    _fwd(x, w, y, rstd, 1e-6)
