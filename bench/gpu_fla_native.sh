#!/usr/bin/env bash
# The native FLA examples (examples/fla-chunk-simple-gla, examples/fla-chunk-gla) on a GPU machine:
# the references against torch autograd, then `kloop verify` of each example's v0 — FLA's own
# kernels from fla-core — cold (empty Triton caches; the gate alone, without held-out shapes: it
# fills the caches of the gate's keys, which cover the bench's) and warm (the figure of docs/perf.md: held-out shapes drawn
# as usual, their first calls compiling and autotuning), and the gate of the broken candidate.
# Each step is time-boxed; its output is STEP.txt (STEP.json for kloop's record) and its exit
# status and wall time a line of steps.txt, where its wall time went STEP.op_times.jsonl
# (KLOOP_OP_TIMES, docs/measurement.md).
#
#   bench/gpu_fla_native.sh KLOOP OUT_DIR [STEPS]     # fla-core and nvidia-cutlass importable (PYTHONPATH)
#
# STEPS (default all): ref sgla_cold sgla_warm sgla_listed gla_cold gla_warm broken cache_out
#   sgla_listed: warm, the listed shapes only (--held-out 0): a held-out shape is new to FLA's
#   autotuners (chunk_fwd_o's key holds H, chunk_fwd_h's K and V), so its first call autotunes
#   sgla_cuda: the CUDA forward (versions/v1_cuda.cu, a native candidate of the Python op), its gate
#   and bench for the forward modes, two held-out shapes each
#   sgla_cuda_ab: that CUDA forward against v0 (FLA's Triton) in one A/B, forward modes
#   sgla_cuda2: versions/v2_cuda.cu (v1's forward and the CUDA backward), every mode, two held-out
#   shapes each
#   sgla_cuda2_ab: v2 against v0 in one A/B, every mode (v0's backward: FLA's fused_recurrent_bwd)
#   sgla_cuda2_bwd_ab: the same, backward modes only (no forward autotuning of v0 on a cold cache)
#   sgla_cuda3: versions/v3_cuda.cu (the split forward, v2's backward), its gate and bench, forward modes
#   sgla_cuda3_ab: v3 against v2 in one A/B, forward modes (the fused forward against the split one)
#   sgla_cuda2_bwd: v2's backward through the gate only (bwd modes, listed shapes)
#   sgla_cuda4: versions/v4_cuda.cu (v3 with the output pass on wgmma, CuTe from nvidia-cutlass on
#   PYTHONPATH), the gate of the forward modes, two held-out shapes each
#   sgla_cuda4_prof: v4's forward at B1_T8192_H96_D128 under Nsight Compute (targeted), without a
#   gate (sgla_cuda4 gated it): the Python op's profile path, one captured call
#   sgla_cuda4_ab: v4 against v3 in one A/B, dense forward (the output pass alone differs)
#   sgla_cuda5: versions/v5_cuda.cu (the segment-state forward on wgmma), the gate of the forward
#   modes, two held-out shapes each
#   sgla_cuda5_ab: v5 against v0 (FLA's Triton) in one A/B, forward modes: the goal's comparison
#   sgla_fla_prof: v0's forward (FLA's Triton: chunk_fwd_h, chunk_fwd_o) at the same shape, targeted
#   cache_out: kloop's Python build cache and JIT caches (Triton's, Inductor's) as OUT_DIR/kloop-cache.tgz.*
#   (15 MiB parts); with KLOOP_CACHE_TGZ=PREFIX set, the parts PREFIX.* are unpacked into the cache
#   first (a later machine starts warm).
set -u
k=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); out=$2
steps=${3:-"ref sgla_cold sgla_warm sgla_listed gla_cold gla_warm broken cache_out"}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"; mkdir -p "$out"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kloop"
if [ -n "${KLOOP_CACHE_TGZ:-}" ] && compgen -G "$KLOOP_CACHE_TGZ.*" > /dev/null; then
  mkdir -p "$cache" && cat "$KLOOP_CACHE_TGZ".* | tar -xz -C "$cache" && echo "cache: unpacked $KLOOP_CACHE_TGZ.*" | tee -a "$out/steps.txt"
fi
run() {  # NAME TIMEBOX CMD...
  local name=$1 box=$2; shift 2
  local t0; t0=$(date +%s.%N)
  KLOOP_OP_TIMES="$out/$name.op_times.jsonl" timeout "$box" "$@" > "$out/$name.txt" 2>&1; local rc=$?
  awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%s rc=%d wall=%.1f s\n", n, rc, b - a }' \
    | tee -a "$out/steps.txt"
  grep -E "^(gate|bench|result):|candidate time:" "$out/$name.txt" | tee -a "$out/steps.txt"
}
s=examples/fla-chunk-simple-gla; g=examples/fla-chunk-gla
for step in $steps; do case $step in
  ref)       run ref 240 python3 tests/examples/fla_reference_check.py ;;
  sgla_cold) run sgla_cold ${BOX:-540} "$k" verify $s --candidate $s/versions/v0_fla.py --no-bench --held-out 0 --json-out "$out/sgla_cold.json" ;;
  sgla_warm) run sgla_warm ${BOX:-300} "$k" verify $s --candidate $s/versions/v0_fla.py --json-out "$out/sgla_warm.json" ;;
  sgla_listed) run sgla_listed ${BOX:-300} "$k" verify $s --candidate $s/versions/v0_fla.py --held-out 0 --json-out "$out/sgla_listed.json" ;;
  gla_cold)  run gla_cold ${BOX:-540} "$k" verify $g --candidate $g/versions/v0_fla.py --no-bench --held-out 0 --json-out "$out/gla_cold.json" ;;
  gla_warm)  run gla_warm ${BOX:-300} "$k" verify $g --candidate $g/versions/v0_fla.py --json-out "$out/gla_warm.json" ;;
  broken)    run sgla_unguarded ${BOX:-300} "$k" verify $s --candidate $s/broken/fla_chunk_bwd_unguarded.py --no-bench \
                 --mode bwd --mode bwd_varlen --json-out "$out/sgla_unguarded.json" ;;
  sgla_cuda) run sgla_cuda ${BOX:-200} "$k" verify $s --candidate $s/versions/v1_cuda.cu --mode fwd --mode fwd_varlen \
                 --held-out 2 --json-out "$out/sgla_cuda.json" ;;
  sgla_cuda_ab) run sgla_cuda_ab ${BOX:-300} "$k" compare $s --candidate $s/versions/v1_cuda.cu --base $s/versions/v0_fla.py \
                 --mode fwd --mode fwd_varlen --json-out "$out/sgla_cuda_ab.json" ;;
  sgla_cuda2) run sgla_cuda2 ${BOX:-300} "$k" verify $s --candidate $s/versions/v2_cuda.cu --held-out 2 \
                 --json-out "$out/sgla_cuda2.json" ;;
  sgla_cuda2_ab) run sgla_cuda2_ab ${BOX:-400} "$k" compare $s --candidate $s/versions/v2_cuda.cu --base $s/versions/v0_fla.py \
                 --json-out "$out/sgla_cuda2_ab.json" ;;
  sgla_cuda2_bwd_ab) run sgla_cuda2_bwd_ab ${BOX:-300} "$k" compare $s --candidate $s/versions/v2_cuda.cu \
                 --base $s/versions/v0_fla.py --mode bwd --mode bwd_varlen --json-out "$out/sgla_cuda2_bwd_ab.json" ;;
  sgla_cuda3) run sgla_cuda3 ${BOX:-300} "$k" verify $s --candidate $s/versions/v3_cuda.cu --mode fwd --mode fwd_varlen \
                 --held-out 2 --json-out "$out/sgla_cuda3.json" ;;
  sgla_cuda3_ab) run sgla_cuda3_ab ${BOX:-300} "$k" compare $s --candidate $s/versions/v3_cuda.cu --base $s/versions/v2_cuda.cu \
                 --mode fwd --mode fwd_varlen --json-out "$out/sgla_cuda3_ab.json" ;;
  sgla_cuda2_bwd) run sgla_cuda2_bwd ${BOX:-150} "$k" verify $s --candidate $s/versions/v2_cuda.cu --mode bwd \
                 --mode bwd_varlen --no-bench --held-out 0 --json-out "$out/sgla_cuda2_bwd.json" ;;
  sgla_cuda4) run sgla_cuda4 ${BOX:-150} "$k" verify $s --candidate $s/versions/v4_cuda.cu --mode fwd --mode fwd_varlen \
                 --no-bench --held-out 2 --json-out "$out/sgla_cuda4.json" ;;
  sgla_cuda4_prof) run sgla_cuda4_prof ${BOX:-120} "$k" profile $s --candidate $s/versions/v4_cuda.cu --mode fwd \
                 --shape B1_T8192_H96_D128 --set targeted --no-gate --out "$out/sgla_cuda4_prof" ;;
  sgla_cuda4_ab) run sgla_cuda4_ab ${BOX:-200} "$k" compare $s --candidate $s/versions/v4_cuda.cu --base $s/versions/v3_cuda.cu \
                 --mode fwd --json-out "$out/sgla_cuda4_ab.json" ;;
  sgla_cuda5) run sgla_cuda5 ${BOX:-150} "$k" verify $s --candidate $s/versions/v5_cuda.cu --mode fwd --mode fwd_varlen \
                 --no-bench --held-out 2 --json-out "$out/sgla_cuda5.json" ;;
  sgla_cuda5_ab) run sgla_cuda5_ab ${BOX:-400} "$k" compare $s --candidate $s/versions/v5_cuda.cu --base $s/versions/v0_fla.py \
                 --mode fwd --mode fwd_varlen --json-out "$out/sgla_cuda5_ab.json" ;;
  sgla_fla_prof) run sgla_fla_prof ${BOX:-300} "$k" profile $s --candidate $s/versions/v0_fla.py --mode fwd \
                 --shape B1_T8192_H96_D128 --set targeted --no-gate --out "$out/sgla_fla_prof" ;;
  cache_out) tar -cz -C "$cache" python python-jit | split -b 15M - "$out/kloop-cache.tgz." && du -ch "$out"/kloop-cache.tgz.* | tee -a "$out/steps.txt" ;;
esac; done
