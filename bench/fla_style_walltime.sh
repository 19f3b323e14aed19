#!/usr/bin/env bash
# Wall time of one iteration, kloop vs an FLA verify.py-style loop, on examples/rmsnorm-triton
# (docs/perf.md). One iteration = judge v1_fused against the base v0_straightforward:
#   kloop:      kloop compare examples/rmsnorm-triton --candidate v1 --base v0
#               (both gated: poison, red zones, 3 seeds, census; then interleaved A/B, both modes,
#               3 bench shapes, L2 flushed, default stopping rule; verdicts with intervals)
#   kloop iterate (ITERATE=1): one loop iteration in a scratch git repository whose workspace was
#               `kloop init`-ed with v0 (untimed): gate v1, A/B against the best (v0, re-gated),
#               classify, log, snapshot, commit; --no-profile, as the FLA-style loop profiles nothing
#   kloop compare, fork server off (FRESH=1): the same with KLOOP_PYTHON_FORK_SERVER=0 — every
#               Python process a fresh interpreter that imports torch (no fork server)
#   FLA-style:  pytest -q bench/fla_style (the candidate vs ref.py, gate shapes, fwd + bwd), then
#               bench/fla_style/bench_rmsnorm.py on the candidate, then on the base (do_bench,
#               separate processes), speedup = ratio of medians
# RUNS alternating rounds; prints each wall time and the per-shape speedups of both.
#
#   bench/fla_style_walltime.sh BIN_DIR OUT_DIR [RUNS=5]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
k="$(cd "$1" && pwd)/src/kloop"; out=$2; runs=${3:-5}
mkdir -p "$out"; cd "$here"
ex=examples/rmsnorm-triton
now() { date +%s.%N; }
diff_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
for i in $(seq 1 "$runs"); do
  t0=$(now)
  "$k" compare $ex --candidate $ex/versions/v1_fused.py --base $ex/versions/v0_straightforward.py \
      --json-out "$out/kloop_compare_$i.json" > "$out/kloop_compare_$i.txt" 2>&1
  rc=$?
  t1=$(now)
  FLA_STYLE_CANDIDATE=$here/$ex/versions/v1_fused.py python3 -m pytest -q -p no:cacheprovider bench/fla_style \
      > "$out/fla_pytest_$i.txt" 2>&1 &&
  python3 bench/fla_style/bench_rmsnorm.py $ex/versions/v1_fused.py > "$out/fla_new_$i.json" 2>> "$out/fla_pytest_$i.txt" &&
  python3 bench/fla_style/bench_rmsnorm.py $ex/versions/v0_straightforward.py > "$out/fla_base_$i.json" 2>> "$out/fla_pytest_$i.txt"
  frc=$?
  t2=$(now)
  fresh=""
  if [ "${FRESH:-0}" = 1 ]; then
    t4=$(now)
    KLOOP_PYTHON_FORK_SERVER=0 "$k" compare $ex --candidate $ex/versions/v1_fused.py --base $ex/versions/v0_straightforward.py \
        --json-out "$out/kloop_fresh_$i.json" > "$out/kloop_fresh_$i.txt" 2>&1
    xrc=$?
    fresh=", \"kloop_fresh_s\": $(diff_s "$t4" "$(now)"), \"kloop_fresh_rc\": $xrc"
  fi
  it=""
  if [ "${ITERATE:-0}" = 1 ]; then
    repo=$(mktemp -d)/loop; mkdir -p "$repo"; cp -r $ex "$repo/op"; cp $ex/versions/v0_straightforward.py "$repo/op/kernel.py"
    (cd "$repo" && git init -q && git add -A && git -c user.email=k@l -c user.name=kloop commit -qm init)
    "$k" init "$repo/op" --candidate "$repo/op/kernel.py" --max-iterations 3 --workspace "$repo/ws" --no-profile \
        > "$out/kloop_init_$i.txt" 2>&1
    cp $ex/versions/v1_fused.py "$repo/op/kernel.py"
    printf 'Direction: one fused kernel per pass\nExpected: faster\n\n## Strategy tags\n- fusion\n' > "$repo/p.md"
    t3=$(now)
    "$k" iterate --workspace "$repo/ws" --candidate "$repo/op/kernel.py" --proposal "$repo/p.md" --no-profile \
        > "$out/kloop_iterate_$i.txt" 2>&1
    irc=$?
    it=", \"iterate_s\": $(diff_s "$t3" "$(now)"), \"iterate_rc\": $irc"
    rm -rf "$(dirname "$repo")"
  fi
  echo "{\"run\": $i, \"kloop_s\": $(diff_s "$t0" "$t1"), \"kloop_rc\": $rc, \"fla_s\": $(diff_s "$t1" "$t2"), \"fla_rc\": $frc$fresh$it}" \
      | tee -a "$out/walltime.jsonl"
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(d, "walltime.jsonl"))]
def line(key):
    xs = [r[key] for r in rows]
    m = statistics.median(xs)
    return f"median {m:.1f} s, min {min(xs):.1f}, max {max(xs):.1f}, spread {(max(xs) - min(xs)) / m * 100:.1f} %"
print("kloop compare (gate both + interleaved A/B):", line("kloop_s"))
print("FLA-style (pytest + do_bench new + do_bench base):", line("fla_s"))
if all("kloop_fresh_s" in r for r in rows):
    print("kloop compare, fork server off (every worker a fresh interpreter):", line("kloop_fresh_s"))
if all("iterate_s" in r for r in rows):
    print("kloop iterate (gate v1 + A/B against v0, --no-profile):", line("iterate_s"))
sp = {}
for f in sorted(glob.glob(os.path.join(d, "kloop_compare_*.json"))):
    for s in json.load(open(f)).get("shapes", []):
        sp.setdefault((s["mode"], s["shape"]), {"kloop": [], "fla": []})["kloop"].append(s.get("speedup", float("nan")))
for i in range(1, len(rows) + 1):
    try:
        new = {(s["mode"], s["shape"]): s["ms"] for s in json.load(open(os.path.join(d, f"fla_new_{i}.json")))["shapes"]}
        base = {(s["mode"], s["shape"]): s["ms"] for s in json.load(open(os.path.join(d, f"fla_base_{i}.json")))["shapes"]}
    except (OSError, json.JSONDecodeError):
        continue
    for key in new:
        sp.setdefault(key, {"kloop": [], "fla": []})["fla"].append(base[key] / new[key])
print("| mode | shape | kloop speedups | FLA-style speedups | kloop spread | FLA-style spread |")
print("|---|---|---|---|--:|--:|")
for (mode, shape), v in sorted(sp.items()):
    f = lambda xs: ", ".join(f"{x:.3f}" for x in xs)
    s = lambda xs: f"{(max(xs) - min(xs)) / statistics.median(xs) * 100:.1f} %" if len(xs) > 1 else "—"
    print(f"| {mode} | {shape} | {f(v['kloop'])} | {f(v['fla'])} | {s(v['kloop'])} | {s(v['fla'])} |")
PY
