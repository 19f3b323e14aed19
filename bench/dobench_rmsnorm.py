#!/usr/bin/env python3
"""The rmsnorm examples timed by Triton's own benchmark helpers, for the side-by-side figures of
docs/perf.md (bench/dobench_side_by_side.sh runs this and `kloop verify` alternately).

One process = one "run": for each shape it times the forward pass of one candidate with
  - triton.testing.do_bench(fn, return_mode="median")   (zeroes a 256 MB buffer before each call:
    an L2 flush, but the zeroing kernel's tail and the launch gaps are inside its events), and
  - triton.testing.do_bench_cudagraph(fn, return_mode="median")   (graph replay, no flush: inputs
    that fit in L2 stay there between calls),
and prints one JSON object: {"tool": ..., "shapes": [{"shape", "do_bench_ms", "do_bench_cudagraph_ms"}]}.

  dobench_rmsnorm.py --cuda-so LIB.so  r8192_h1024 r16384_h8192 ...   # a kloop CUDA candidate (kernel.h ABI)
  dobench_rmsnorm.py --triton FILE.py  r8192_h1024 ...                # a kloop Python candidate

Shapes are named as in the examples' op.toml: rN_hD (N rows, hidden size D).
"""
import argparse
import ctypes
import json
import re
import sys

import torch
import triton
import triton.testing

EPS = 1e-6
MAX_DIMS = 8


class KlTensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("device", ctypes.c_int), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS)]


class KlParam(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("f64", ctypes.c_double), ("i64", ctypes.c_int64)]


class KlDim(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class KlArgs(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_int32), ("n_inputs", ctypes.c_int32), ("inputs", ctypes.POINTER(KlTensor)),
                ("n_outputs", ctypes.c_int32), ("outputs", ctypes.POINTER(KlTensor)),
                ("n_params", ctypes.c_int32), ("params", ctypes.POINTER(KlParam)),
                ("n_dims", ctypes.c_int32), ("dims", ctypes.POINTER(KlDim)), ("stream", ctypes.c_void_p)]


KL_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
KL_CUDA = 1


def kl_tensor(name, t):
    k = KlTensor()
    k.name, k.data, k.dtype, k.device, k.ndim = name.encode(), t.data_ptr(), KL_DTYPE[t.dtype], KL_CUDA, t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        k.shape[i], k.strides[i] = s, st
    return k


def cuda_fwd(lib_path, x, w, y, rstd):
    """A callable that runs the candidate's rmsnorm_fwd through the kernel.h ABI on torch's stream."""
    fn = ctypes.CDLL(lib_path).rmsnorm_fwd
    fn.argtypes, fn.restype = [ctypes.POINTER(KlArgs)], ctypes.c_int
    n, d = x.shape
    ins = (KlTensor * 2)(kl_tensor("x", x), kl_tensor("w", w))
    outs = (KlTensor * 2)(kl_tensor("y", y), kl_tensor("rstd", rstd))
    params = (KlParam * 1)(KlParam(b"eps", EPS, 0))
    dims = (KlDim * 2)(KlDim(b"N", n), KlDim(b"D", d))
    args = KlArgs(1, 2, ins, 2, outs, 1, params, 2, dims, None)
    keep = (ins, outs, params, dims)  # the arrays must outlive the calls

    def call():
        # torch's current stream at each call: do_bench_cudagraph captures on a stream of its own.
        args.stream = torch.cuda.current_stream().cuda_stream
        rc = fn(ctypes.byref(args))
        if rc != 0:
            raise RuntimeError(f"rmsnorm_fwd returned {rc}")
        return keep
    return call


def triton_fwd(path, x, w, y, rstd):
    import importlib.util
    spec = importlib.util.spec_from_file_location("candidate", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return lambda: mod.rmsnorm_fwd(x, w, y, rstd, EPS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--cuda-so")
    kind.add_argument("--triton")
    ap.add_argument("shapes", nargs="+")
    a = ap.parse_args()
    torch.manual_seed(0)
    out = {"tool": f"triton {triton.__version__} do_bench / do_bench_cudagraph", "torch": torch.__version__,
           "device": torch.cuda.get_device_name(), "shapes": []}
    for name in a.shapes:
        m = re.fullmatch(r"r(\d+)_h(\d+)", name)
        if not m:
            sys.exit(f"shape '{name}': expected rN_hD")
        n, d = int(m[1]), int(m[2])
        x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(d, device="cuda", dtype=torch.bfloat16) + 0.5
        y = torch.empty_like(x)
        rstd = torch.empty(n, device="cuda", dtype=torch.float32)
        fn = cuda_fwd(a.cuda_so, x, w, y, rstd) if a.cuda_so else triton_fwd(a.triton, x, w, y, rstd)
        fn()
        torch.cuda.synchronize()
        ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS) * w.float())
        if not torch.allclose(y.float(), ref, rtol=2e-2, atol=1e-2):
            sys.exit(f"shape {name}: the candidate's output is wrong; refusing to time it")
        db = triton.testing.do_bench(fn, return_mode="median")
        dbg = triton.testing.do_bench_cudagraph(fn, return_mode="median")
        out["shapes"].append({"shape": name, "bytes": 2 * (2 * n * d + d) + 4 * n, "do_bench_ms": db,
                              "do_bench_cudagraph_ms": dbg})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
