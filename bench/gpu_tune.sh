#!/usr/bin/env bash
# `kloop tune` on the GPU machine, for the CUDA example and (when time is left) the Triton one.
# CUDA: a scratch loop repository with examples/rmsnorm-cuda, `kloop init` with the hand-written
# best (v4_hybrid.cu) as the candidate, no iteration, then `kloop tune` on v5_tuned.cu (v4 with
# kThreads and kVecs as tunables: a coordinate search of at most 4 points), then `kloop report`.
# Triton: the same with examples/rmsnorm-triton, v1_fused.py as the baseline and v2_tuned.py
# tuned (coordinate, at most 4 points). Each tune is stopped with SIGINT after a time limit
# (240 s CUDA, 150 s Triton; the points so far stay recorded: exit 130). Short timing options
# throughout: on an H200 the CUDA part takes about 4 minutes, the Triton part 1.5.
# Writes every command's output, the tune tables, the proposals and the final summaries to OUT_DIR.
# Usage: gpu_tune.sh KLOOP OUT_DIR [PARTS]   PARTS: "cuda triton" (default), "cuda" or "triton"
#        (e.g. bash bench/gpu_tune.sh gpu-bin/src/kloop "$OUT/tune" triton)
set -uo pipefail
kloop=$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")
out=$2
parts=${3:-cuda triton}
src=$(cd "$(dirname "$0")/.." && pwd -P)
mkdir -p "$out"
export KLOOP_MEMORY_DB="$out/memory.sqlite"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
timing=(--min-samples 5 --min-time 0.02 --max-time 0.3 --held-out 0)

# run_tune NAME EXAMPLE_DIR REFERENCE KERNEL BASELINE TUNED TUNE_LIMIT_S
run_tune() {
  local name=$1 ex=$2 ref=$3 kernel=$4 baseline=$5 tuned=$6 limit=$7
  local repo; repo=$(mktemp -d "/tmp/kloop-tune-$name.XXXXXX")
  local o="$out/$name"; mkdir -p "$o" "$repo/op"
  cp "$src/$ex/op.toml" "$src/$ex/$ref" "$repo/op/"
  cp "$src/$ex/versions/$baseline" "$repo/$kernel"
  git() { command git -C "$repo" -c user.email=k@localhost -c user.name=k "$@"; }
  git init -q && git add -A && git commit -qm start
  echo "[$(elapsed)s] $name: init with $baseline"
  (cd "$repo" && "$kloop" init op --candidate "$kernel" --max-iterations 3 --workspace ws --no-profile "${timing[@]}") \
    >"$o/init.txt" 2>&1 || { echo "$name: init failed"; tail -5 "$o/init.txt"; return 1; }
  cp "$src/$ex/versions/$tuned" "$repo/$kernel"
  echo "[$(elapsed)s] $name: tune $tuned"
  (cd "$repo" && timeout -s INT "$limit" "$kloop" tune --workspace ws --candidate "$kernel" --search coordinate \
     --budget 4 --no-profile "${timing[@]}") >"$o/tune.txt" 2>&1
  echo "$name: tune exit $?"
  echo "[$(elapsed)s] $name: report"
  (cd "$repo" && "$kloop" report --workspace ws --allow-unprofiled "${timing[@]}") >"$o/report.txt" 2>&1
  echo "$name: report exit $?"
  (cd "$repo" && "$kloop" status --workspace ws) >"$o/status.txt" 2>&1
  cp "$repo"/ws/tune_v*.md "$repo"/ws/final_summary.md "$repo"/ws/OPT_LOG.md "$o/" 2>/dev/null
  cp "$repo"/ws/iter_v1/optimization_proposal.md "$o/" 2>/dev/null
  git log --oneline >"$o/git_log.txt"
  sed -n '/^tune: /,$p' "$o/tune.txt" | head -40
}

case " $parts " in *" cuda "*) run_tune cuda examples/rmsnorm-cuda reference.cu kernel.cu v4_hybrid.cu v5_tuned.cu 240 ;; esac
case " $parts " in *" triton "*) run_tune triton examples/rmsnorm-triton ref.py kernel.py v1_fused.py v2_tuned.py 150 ;; esac
echo "[$(elapsed)s] done: $out"
