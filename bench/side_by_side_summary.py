#!/usr/bin/env python3
"""Summarises bench/dobench_side_by_side.sh's runs: per backend and shape, the median over runs of
each tool's per-run median, the run-to-run spread ((max - min) / median of the per-run medians),
and the bandwidth (spec bytes / time). Prints a markdown table.

  side_by_side_summary.py DIR      # DIR holds kloop_{cuda,triton}_I.json and dobench_{cuda,triton}_I.json
"""
import glob
import json
import os
import statistics
import sys


def spread(xs):
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else float("nan")


def main():
    d = sys.argv[1]
    print("| backend | shape | MB moved | tool | runs | median of run medians (µs) | run-to-run spread | GB/s |")
    print("|---|---|--:|---|--:|--:|--:|--:|")
    for backend in ("cuda", "triton"):
        kl, db = {}, {}
        for f in sorted(glob.glob(os.path.join(d, f"kloop_{backend}_*.json"))):
            rec = json.load(open(f))
            for s in rec.get("bench", {}).get("shapes", []):
                if s.get("ok") and s.get("mode") == "fwd":
                    kl.setdefault(s["shape"], []).append((s["median_ms"], s.get("bytes", 0)))
        for f in sorted(glob.glob(os.path.join(d, f"dobench_{backend}_*.json"))):
            try:
                rec = json.load(open(f))
            except json.JSONDecodeError:
                continue
            for s in rec["shapes"]:
                db.setdefault(s["shape"], []).append(s)
        for shape in sorted(set(kl) | set(db), key=lambda s: int(s.split("_")[0][1:]) * int(s.split("_h")[1])):
            nbytes = (kl.get(shape) or [(0, 0)])[0][1] or (db.get(shape) or [{"bytes": 0}])[0]["bytes"]
            rows = [("kloop verify (L2 flushed, events)", [m for m, _ in kl.get(shape, [])]),
                    ("do_bench (L2 zeroed)", [s["do_bench_ms"] for s in db.get(shape, [])]),
                    ("do_bench_cudagraph (no flush)", [s["do_bench_cudagraph_ms"] for s in db.get(shape, [])])]
            for tool, xs in rows:
                if not xs:
                    continue
                med = statistics.median(xs)
                print(f"| {backend} | {shape} | {nbytes / 1e6:.0f} | {tool} | {len(xs)} | {med * 1e3:.2f} | "
                      f"{spread(xs) * 100:.2f} % | {nbytes / (med * 1e-3) / 1e9:.0f} |")


if __name__ == "__main__":
    main()
