#!/usr/bin/env python3
"""Which CUDA and Triton operations a confined Python candidate host can still do, per part of
its confinement (python/kloop_worker/confinement.py; docs/security.md, "Python candidate hosts").

    python3 bench/python_confinement_probe.py [VARIANT ...]

The parent allocates a CUDA tensor and hands it out by CUDA IPC (torch's reduce_tensor, as the
checker does). For each variant a fresh child sets up CUDA as a host does (its own context),
applies that part of the policy a host gets, then tries, each step on its own: mapping the
parent's buffer from its IPC handle and reading it (torch's sharing, "ipc_torch", and kloop's,
"ipc_kloop": kloop_worker/cuda_ipc.py), a new device allocation, and compiling and launching a
Triton kernel into a fresh cache. It prints one line per (variant, step): ok, or the
exception. Variants: none, nnp (no_new_privs only), seccomp, landlock, full (what a host gets),
full+shm (full, with /dev/shm writable), full+sockets. Default: all of them.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

VARIANTS = ("none", "nnp", "seccomp", "landlock", "full", "full+shm", "full+sockets")


def _triton_step():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    x = torch.zeros(4096, device="cuda")
    add_one[(4,)](x, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    assert float(x.sum()) == 4096.0, float(x.sum())


def child(variant: str) -> None:
    import torch

    args = pickle.load(sys.stdin.buffer)
    torch.zeros(1, device="cuda")  # the host's own context, before confinement
    torch.cuda.synchronize()
    tmp = tempfile.mkdtemp(prefix="kloop-probe-")
    cache = os.path.join(tmp, "triton")
    os.makedirs(cache)
    os.environ["TRITON_CACHE_DIR"] = cache
    from kloop_worker import confinement as c

    readable, _ = c.read_dirs_for({}, [])
    devices = c.device_paths()
    writable = [tmp] + (["/dev/shm"] if variant == "full+shm" else [])
    detail = ""
    if variant == "nnp":
        c._libc().prctl(38, 1, 0, 0, 0)
    elif variant == "seccomp":
        c._libc().prctl(38, 1, 0, 0, 0)
        import ctypes

        prog = c.host_filter(os.getpid()).packed()
        filt = ctypes.create_string_buffer(prog, len(prog))
        fprog = c._SockFprog(len(prog) // 8, ctypes.cast(filt, ctypes.c_void_p))
        rc = c._libc().syscall(ctypes.c_long(c._SYS["seccomp"]), ctypes.c_uint(1), ctypes.c_uint(1),
                               ctypes.byref(fprog))
        detail = "seccomp rc %d" % rc
    elif variant == "landlock":
        c._libc().prctl(38, 1, 0, 0, 0)
        abi, d = c.apply_landlock(readable, writable, devices)
        detail = "landlock abi %d %s" % (abi, d)
    elif variant.startswith("full"):
        r = c.confine_self({"read_dirs": readable, "write_dirs": writable, "device_paths": devices,
                            "tmp_dir": tmp, "allow_sockets": variant == "full+sockets"})
        detail = "confined %s %s" % (r["confined"], r["detail"])
    print("%-13s setup: %s" % (variant, detail or "-"), flush=True)

    def ipc_torch():
        rebuild, rargs = args[0]
        t = rebuild(*rargs)
        assert float(t.sum()) == float(t.numel()), float(t.sum())

    def ipc_kloop():
        from kloop_worker import cuda_ipc

        cuda_ipc.use_device(0)
        t = cuda_ipc.Imported(args[1], 1 << 20).tensor(torch, torch.device("cuda"))
        assert int(t.sum()) == 1 << 20, int(t.sum())
        t.fill_(2)
        torch.cuda.synchronize()

    def alloc():
        y = torch.empty(1 << 24, device="cuda")
        y.fill_(2.0)
        torch.cuda.synchronize()

    for name, fn in (("ipc_torch", ipc_torch), ("ipc_kloop", ipc_kloop), ("alloc", alloc), ("triton", _triton_step)):
        try:
            fn()
            print("%-13s %-9s ok" % (variant, name), flush=True)
        except BaseException as e:  # noqa: BLE001 - a probe reports everything
            text = ("%s: %s" % (type(e).__name__, e)).replace("\n", " | ")[:400]
            print("%-13s %-9s FAILED %s" % (variant, name, text), flush=True)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    from kloop_worker import cuda_ipc

    x = torch.ones(1 << 20, device="cuda")
    cuda_ipc.use_device(0)
    mine = cuda_ipc.Allocation(1 << 20)
    y = mine.tensor(torch, torch.device("cuda"))
    y.fill_(1)
    torch.cuda.synchronize()
    payload = pickle.dumps((reduce_tensor(x), mine.export()))
    for v in sys.argv[1:] or VARIANTS:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", v], input=payload,
                           capture_output=True, timeout=300)
        sys.stdout.write(p.stdout.decode(errors="replace"))
        if p.returncode != 0:
            tail = p.stderr.decode(errors="replace").strip().splitlines()[-3:]
            print("%-13s exit %d: %s" % (v, p.returncode, " | ".join(tail)), flush=True)
        else:
            twos = int((y == 2).sum())
            print("%-13s ipc_kloop writes seen by the parent: %d of %d" % (v, twos, 1 << 20), flush=True)
            y.fill_(1)
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
