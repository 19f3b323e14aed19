#!/usr/bin/env bash
# kloop's GPU timing vs Nsight Compute on a device-to-device copy (docs/perf.md, "Timing agreement with ncu").
#
#   bench/gpu_timing_agreement.sh [--build DIR] [--ncu] [N ...]
#
# Times a float4 copy of N floats (default sizes: 1M … 128M; 2M ≈ 5 µs and 32M ≈ 60 µs on an
# H200) with `kloop verify` (the full protocol: L2 flush, blocking kernel, events, graph replay for
# kernels under 20 µs) and prints, per size, kloop's median, min, CV, graph replay per call and
# bandwidth. With --ncu it also replays kloop's own bench job under
#   ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum,launch__grid_size
# (30 samples per size, no graph replay) and prints ncu's median gpu__time_duration next to
# kloop's, with the difference. Goal: within 2 % for kernels >= 50 µs (docs/perf.md).
# Needs: a GPU, python3, kloop built with CUDA (kloop + kloop-runner-cuda in DIR/src), ncu for --ncu.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build"
use_ncu=0
sizes=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --ncu) use_ncu=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1048576 2097152 8388608 33554432 134217728)
kloop="$build/src/kloop"
[[ -x "$kloop" && -x "$build/src/kloop-runner-cuda" ]] || { echo "error: no kloop / kloop-runner-cuda in $build/src (build with CUDA first)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/kloop-gpu-agreement.XXXXXX")"
op="$work/copy"
mkdir -p "$op"
cp "$here/tests/gpu/data/copy/reference.cu" "$op/reference.cu"
# The candidate without its grid cap, so every size launches a distinct grid (ncu rows are
# matched to sizes by launch__grid_size).
sed '/if (blocks > 132 \* 8)/d' "$here/tests/gpu/data/copy/versions/copy_v1.cu" > "$op/copy_bench.cu"
{
  echo '[op]'
  echo 'name = "copy_agreement"'
  echo 'backend = "cuda"'
  echo 'reference = "reference.cu"'
  echo '[dims]'
  echo 'names = ["N"]'
  echo '[[shapes]]'
  echo 'name = "n1000"'
  echo 'dims = { N = 1000 }'
  echo 'use = ["gate"]'
  for n in "${sizes[@]}"; do
    echo '[[shapes]]'
    echo "name = \"n$n\""
    echo "dims = { N = $n }"
    echo 'use = ["bench"]'
  done
  echo '[modes.fwd]'
  echo 'entry = "copy_fwd"'
  echo 'reference_entry = "copy_ref"'
  echo 'bytes = "8*N"'
  echo 'inputs = [{ name = "x", dtype = "f32", shape = ["N"], init = "normal(0, 1)" }]'
  echo 'outputs = [{ name = "y", dtype = "f32", shape = ["N"], atol = 0, rtol = 0 }]'
} > "$op/op.toml"

echo "kloop: timing ${#sizes[@]} sizes (work dir $work)" >&2
"$kloop" verify "$op" --candidate "$op/copy_bench.cu" --json --keep "$work/keep" \
  --min-samples 50 --min-time 0.5 --max-time 10 > "$work/kloop.json" || { echo "kloop verify failed; see $work" >&2; exit 1; }

if [[ $use_ncu -eq 1 ]]; then
  command -v ncu >/dev/null || { echo "error: ncu not on PATH" >&2; exit 2; }
  # kloop's own bench job, cut to 30 samples per size, no timed-call checks.
  python3 - "$work/keep/bench_job.json" "$work/ncu_job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for b in j["bench"]:
    b["stop"].update(min_samples=30, max_samples=30, min_time_s=0.0)
    b["warmup_min_calls"], b["warmup_min_s"], b["check_every"] = 3, 0.0, 0
json.dump(j, open(sys.argv[2], "w"))
PY
  echo "ncu: profiling the same job (this takes a while)" >&2
  KLOOP_NO_GRAPH_REPLAY=1 ncu --target-processes all --clock-control none --cache-control all \
      -k regex:copy_kernel --metrics gpu__time_duration.sum,launch__grid_size --csv --page raw --print-units base \
      "$build/src/kloop-runner-cuda" --job "$work/ncu_job.json" --events "$work/ncu_events.jsonl" > "$work/ncu.csv" \
      2> "$work/ncu.log" || { echo "ncu failed; see $work/ncu.log" >&2; exit 1; }
fi

python3 - "$work/kloop.json" "$work/ncu.csv" "$use_ncu" <<'PY'
import csv, json, statistics, sys
rec = json.load(open(sys.argv[1]))
ncu = {}
if sys.argv[3] == "1":
    rows = list(csv.reader(open(sys.argv[2])))
    head = next(i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r)
    cols = rows[head]
    t, g = cols.index("gpu__time_duration.sum"), cols.index("launch__grid_size")
    for r in rows[head + 1:]:
        try:
            ncu.setdefault(int(float(r[g].replace(",", ""))), []).append(float(r[t].replace(",", "")) * 1e-3)  # ns -> µs; ncu writes thousands separators
        except (ValueError, IndexError):
            pass  # the units row
dev = next((e for e in [rec.get("env", {})] if e), {})
print(f"# kloop GPU timing agreement — {rec['kloop']['version']} ({rec['kloop']['commit']})")
print(f"{'N':>11} {'MiB':>7} {'median_us':>10} {'min_us':>9} {'cv%':>6} {'graph_us':>9} {'GB/s':>8} {'SM MHz':>7} {'ncu_us':>9} {'diff%':>7}")
for s in rec["bench"]["shapes"]:
    n = int(s["shape"][1:])
    med = s.get("median_ms", float("nan")) * 1e3
    graph = s.get("graph_replay_ms_per_call")
    grid = ((n + 3) // 4 + 255) // 256
    nc = statistics.median(ncu[grid]) if grid in ncu else None
    print(f"{n:>11} {8 * n / 2**20:>7.1f} {med:>10.2f} {s.get('min_ms', 0) * 1e3:>9.2f} {s.get('cv', 0) * 100:>6.2f} "
          f"{(graph * 1e3 if graph else float('nan')):>9.2f} {s.get('gbps', 0):>8.0f} {s.get('sm_clock_mhz_median', 0):>7.0f} "
          f"{(nc if nc else float('nan')):>9.2f} {((med / nc - 1) * 100 if nc else float('nan')):>7.2f}")
PY
echo "raw records: $work" >&2
