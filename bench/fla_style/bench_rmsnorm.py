"""The bench of an FLA-style loop (FLA's benchmarks/ with triton.testing.do_bench): one candidate,
forward and backward, on the example's bench shapes; prints {"file", "shapes": [{mode, shape, ms}]}.

  python3 bench_rmsnorm.py CANDIDATE.py
"""
import importlib.util
import json
import sys

import torch
import triton.testing

SHAPES = [(8192, 1024), (16384, 4096), (32768, 2048)]


def main():
    spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {"file": sys.argv[1], "shapes": []}
    for n, d in SHAPES:
        x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
        w = (torch.rand(d, device="cuda") + 0.5).to(torch.bfloat16)
        y, r = torch.empty_like(x), torch.empty(n, device="cuda")
        dy, dx, dw = torch.randn_like(x), torch.empty_like(x), torch.empty_like(w)
        fwd = triton.testing.do_bench(lambda: mod.rmsnorm_fwd(x, w, y, r, 1e-6), return_mode="median")
        bwd = triton.testing.do_bench(lambda: mod.rmsnorm_bwd(x, w, r, dy, dx, dw), return_mode="median")
        out["shapes"] += [{"mode": "fwd", "shape": f"r{n}_h{d}", "ms": fwd}, {"mode": "bwd", "shape": f"r{n}_h{d}", "ms": bwd}]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
