"""What a Python worker's start costs, and what forking a warmed parent saves (docs/perf.md,
"Python worker start costs"; the reason for kloop's fork server, docs/python.md).

A kloop Python process (build probe, gate, bench, A/B) that starts as a fresh interpreter imports
torch itself. This measures, on the machine it runs on:

  fresh   a new interpreter per step: `python3 -c "import <mods>"`, wall time, N times
  fork    one parent imports the same modules once (timed, with its thread count after the
          imports), then forks N children; each child initialises CUDA, runs a small Triton kernel
          (when triton and a GPU are there) and checks its result; wall time from fork to exit

Prints one JSON object. The parent never touches CUDA (a forked child could not use it).

    python3 bench/python_fork_startup.py [N=3]
"""

import json
import os
import subprocess
import sys
import time


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def fresh(mods, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import " + ", ".join(mods)], check=True)
        out.append(round(time.perf_counter() - t0, 3))
    return out


def child_work() -> str:
    """What a worker does first: CUDA, a tensor, a JIT-compiled Triton kernel. Returns a status."""
    try:
        import torch
    except ImportError:
        return "no torch"
    if not torch.cuda.is_available():
        return "no GPU"
    x = torch.arange(1024, device="cuda", dtype=torch.float32)
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return "torch only: sum %s" % float(x.sum())

    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 2, mask=m)

    y = torch.empty_like(x)
    double[(4,)](x, y, 1024, BLOCK=256)
    torch.cuda.synchronize()
    return "ok" if bool((y == 2 * x).all()) else "WRONG RESULT"


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    mods = []
    for m in ("numpy", "torch", "triton"):
        try:
            __import__(m)
            mods.append(m)
        except ImportError:
            pass
    # (the imports above were only to learn what is installed; the timed parent starts fresh)
    mods = mods or ["os"]
    result = {"modules": mods, "fresh_import_s": fresh(mods, n)}
    t0 = time.perf_counter()
    code = (
        "import os, sys, time, json\n"
        "t0 = time.perf_counter()\n"
        "import %s\n"
        "t1 = time.perf_counter()\n"
        "sys.path.insert(0, %r)\n"
        "from python_fork_startup import child_work, threads\n"
        "res = {'parent_import_s': round(t1 - t0, 3), 'parent_threads': threads(), 'children': []}\n"
        "for i in range(%d):\n"
        "    r, w = os.pipe()\n"
        "    t = time.perf_counter()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.close(r)\n"
        "        s = child_work()\n"
        "        os.write(w, s.encode()); os._exit(0)\n"
        "    os.close(w)\n"
        "    s = os.read(r, 200).decode(); os.close(r)\n"
        "    _, st = os.waitpid(pid, 0)\n"
        "    res['children'].append({'status': s, 'exit': st, 'wall_s': round(time.perf_counter() - t, 3)})\n"
        "t = time.perf_counter(); s = child_work()\n"
        "res['fresh_process_first_work_s'] = round(time.perf_counter() - t, 3); res['fresh_status'] = s\n"
        "print(json.dumps(res))\n"
    ) % (", ".join(mods), os.path.dirname(os.path.abspath(__file__)), n)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    result["fork_total_s"] = round(time.perf_counter() - t0, 3)
    if p.returncode != 0:
        result["error"] = p.stderr[-2000:]
    else:
        result.update(json.loads(p.stdout.strip().splitlines()[-1]))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
