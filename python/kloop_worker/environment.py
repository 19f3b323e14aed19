"""Which tensors a run uses, and the versions of everything involved.

``[python] device`` in op.toml (the manifest carries it):

* ``cpu``  — numpy arrays; torch is never imported.
* ``cuda`` — torch tensors on the GPU. Without torch: an environment error naming the missing
  module. Without a visible GPU: torch tensors on the CPU, and, when triton is installed,
  ``TRITON_INTERPRET=1`` so Triton kernels run in Triton's interpreter (a functional check; the
  times are the interpreter's).
* ``auto`` — ``cuda`` when torch imports and sees a GPU, else ``cpu``.

Resolution happens in the probe (kloop's "build" step, whose facts go into the record) and
again in every worker, so the record of a run says what that run actually used.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any, Dict


def _version_of(module) -> str:
    return str(getattr(module, "__version__", "unknown"))


def python_facts() -> Dict[str, Any]:
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def resolve(device: str) -> Dict[str, Any]:
    """Facts and the tensor mode; ``environment_error`` (and ``missing_module``) when the
    environment cannot run this device at all. May set TRITON_INTERPRET=1 in os.environ."""
    facts: Dict[str, Any] = {"python": python_facts(), "requested_device": device}
    if device not in ("auto", "cpu", "cuda"):
        facts["environment_error"] = "unknown [python] device '%s' (expected auto, cpu or cuda)" % device
        return facts
    try:
        import numpy  # noqa: F401

        facts["numpy"] = _version_of(numpy)
    except Exception as e:
        facts["numpy"] = None
        facts["missing_module"] = "numpy"
        facts["environment_error"] = "cannot import numpy (%s: %s); kloop's Python worker needs numpy" % (
            type(e).__name__,
            e,
        )
        return facts

    facts["torch"] = None
    facts["triton"] = None
    facts["cuda_available"] = False
    facts["triton_interpret"] = False
    if device == "cpu":
        facts["tensors"] = "numpy"
        return facts

    try:
        import torch

        facts["torch"] = _version_of(torch)
        facts["torch_cuda"] = getattr(torch.version, "cuda", None)
        facts["cuda_available"] = bool(torch.cuda.is_available())
        if facts["cuda_available"]:
            facts["gpu"] = torch.cuda.get_device_name(torch.cuda.current_device())
    except Exception as e:
        facts["torch_error"] = "%s: %s" % (type(e).__name__, e)
        if device == "cuda":
            facts["missing_module"] = "torch"
            facts["environment_error"] = (
                "cannot import torch (%s), which [python] device = \"cuda\" needs for tensors on the GPU"
                % facts["torch_error"]
            )
            return facts
        facts["tensors"] = "numpy"
        return facts

    if device == "auto" and not facts["cuda_available"]:
        facts["tensors"] = "numpy"
        return facts
    if not facts["cuda_available"]:
        # No GPU: torch tensors on the CPU; Triton kernels in Triton's interpreter. Set before
        # triton (and the candidate) are imported: @triton.jit reads it when it decorates.
        try:
            import importlib.util

            if importlib.util.find_spec("triton") is not None:
                os.environ["TRITON_INTERPRET"] = "1"
                facts["triton_interpret"] = True
        except Exception:
            pass
        facts["tensors"] = "torch-cpu"
    else:
        facts["tensors"] = "torch-cuda"
    try:
        import triton

        facts["triton"] = _version_of(triton)
    except Exception as e:
        facts["triton_error"] = "%s: %s" % (type(e).__name__, e)
        if facts["triton_interpret"]:
            os.environ.pop("TRITON_INTERPRET", None)
            facts["triton_interpret"] = False
    return facts


def make_backend(facts: Dict[str, Any]):
    from . import tensors

    mode = facts.get("tensors")
    if mode == "numpy":
        return tensors.NumpyBackend()
    import torch

    return tensors.TorchBackend(torch, "cuda" if mode == "torch-cuda" else "cpu")
