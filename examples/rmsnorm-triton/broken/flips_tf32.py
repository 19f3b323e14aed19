"""Broken: right results, but turns TF32 matmuls on "for speed" and leaves them on — a one-sided
numeric relaxation the reference does not get (the FLA loop's banned list). Rejected by
numeric_flags_unchanged (the worker reads the flags after every call) and by the static
python_source_screen (it assigns allow_tf32)."""
import torch

from _base import rmsnorm_bwd  # noqa: F401
from _base import rmsnorm_fwd as _fwd


def rmsnorm_fwd(x, w, y, rstd, eps):
    torch.backends.cuda.matmul.allow_tf32 = True
    _fwd(x, w, y, rstd, eps)
