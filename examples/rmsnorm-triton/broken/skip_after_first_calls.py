"""Broken (an exploit of predictable checks): computes its first 150 calls in this process (more
than the gate makes), then only every other call, betting that the calls it skips are not the
checked ones. Rejected: outputs are poisoned before every call and a drawn subset of timed calls is
compared, so a skipped one shows NaN (timed_output_checks)."""
from _base import rmsnorm_bwd as _bwd
from _base import rmsnorm_fwd as _fwd

calls = 0


def _skip():
    global calls
    calls += 1
    return calls > 150 and calls % 2 == 1


def rmsnorm_fwd(x, w, y, rstd, eps):
    if not _skip():
        _fwd(x, w, y, rstd, eps)


def rmsnorm_bwd(x, w, rstd, dy, dx, dw):
    if not _skip():
        _bwd(x, w, rstd, dy, dx, dw)
