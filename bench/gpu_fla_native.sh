#!/usr/bin/env bash
# The native FLA examples (examples/fla-chunk-simple-gla, examples/fla-chunk-gla) on a GPU machine:
# the references against torch autograd, then `kloop verify` of each example's v0 — FLA's own
# kernels from fla-core — twice for chunk_simple_gla (cold: empty Triton caches; warm: the figure
# of docs/perf.md), and the gate of the broken candidates. Each step is time-boxed; its output is
# STEP.txt (STEP.json for kloop's record) and its exit status and wall time a line of steps.txt.
#
#   bench/gpu_fla_native.sh KLOOP OUT_DIR [STEPS]     # fla-core importable (PYTHONPATH)
#
# STEPS (default all): ref sgla_cold sgla_warm gla broken
set -u
k=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); out=$2; steps=${3:-"ref sgla_cold sgla_warm gla broken"}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"; mkdir -p "$out"
run() {  # NAME TIMEBOX CMD...
  local name=$1 box=$2; shift 2
  local t0; t0=$(date +%s.%N)
  timeout "$box" "$@" > "$out/$name.txt" 2>&1; local rc=$?
  awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%s rc=%d wall=%.1f s\n", n, rc, b - a }' \
    | tee -a "$out/steps.txt"
}
s=examples/fla-chunk-simple-gla; g=examples/fla-chunk-gla
for step in $steps; do case $step in
  ref)       run ref 240 python3 tests/examples/fla_reference_check.py ;;
  sgla_cold) run sgla_cold 420 "$k" verify $s --candidate $s/versions/v0_fla.py --timeout 600 --json-out "$out/sgla_cold.json" ;;
  sgla_warm) run sgla_warm 240 "$k" verify $s --candidate $s/versions/v0_fla.py --json-out "$out/sgla_warm.json" ;;
  gla)       run gla 420 "$k" verify $g --candidate $g/versions/v0_fla.py --timeout 600 --json-out "$out/gla.json" ;;
  broken)    run sgla_unguarded 300 "$k" verify $s --candidate $s/broken/fla_chunk_bwd_unguarded.py --no-bench \
                 --timeout 600 --mode bwd --mode bwd_varlen --json-out "$out/sgla_unguarded.json" ;;
esac; done
