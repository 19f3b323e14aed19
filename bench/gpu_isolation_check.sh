#!/usr/bin/env bash
# kloop's isolation on a GPU machine: what the kernel offers (seccomp, Landlock), the confinement
# unit tests, the CPU and CUDA exploit corpora, the GPU test suite, and the wall time of
# `kloop verify` with and without the candidate host (docs/security.md, docs/perf.md).
#
#   bench/gpu_isolation_check.sh BIN_DIR [BEFORE_DIR] [ROUNDS]
#
# BIN_DIR holds src/{kloop,kloop-runner,kloop-runner-cuda} and the test binaries under tests/
# (as in a build tree), built on the dev machine under /work/main/build: the test binaries find
# kloop there, so /work/main and /work/main/build are linked to this checkout and BIN_DIR.
# BEFORE_DIR (optional) holds src/{kloop,kloop-runner,kloop-runner-cuda} of the version to
# compare against: `kloop verify` of examples/rmsnorm-cuda v4 (two bench shapes) runs ROUNDS
# times with each, alternating, after one warm-up round each, and the wall times are printed side
# by side (SKIP_CUDA_COMPARE=1 leaves it out). SKIP_TESTS=1 runs only that comparison; AFTER_ARGS adds options to the BIN_DIR side only
# (e.g. --held-out 0, which the older version does not know). STEPS (space-separated) picks the
# steps to run: confinement_unit exploits_cuda rmsnorm_cuda exploits_cpu op_times python_gpu
# (default: the first four); python_cost times `kloop verify` of examples/rmsnorm-triton v1 with the
# Python candidate host confined and with KLOOP_UNCONFINED=1, alternating, ROUNDS rounds after one
# uncounted warm-up of each (python_cost.txt). op_times runs that `kloop verify` once with KLOOP_OP_TIMES
# (docs/measurement.md) and keeps its per-operation wall times. gate_cost times `kloop verify` of
# both examples (rmsnorm-cuda v4 as above, rmsnorm-triton v1) with the default gate and with
# --held-out 0, alternating, ROUNDS rounds after one uncounted warm-up (gate_cost.txt; GATE_EXAMPLES
# picks among "cuda triton"). python_split times `kloop verify` of the Triton example with BEFORE_DIR's
# kloop and its worker package BEFORE_DIR/python against BIN_DIR's, alternating (python_split.txt);
# SPLIT_ARGS adds options to both sides (e.g. --held-out 0, so that both run the same gate).
# distribution_cost times `kloop verify` of each example in GATE_EXAMPLES with its op.toml as it is
# and with a copy whose fwd input x keeps only its first distribution, alternating
# (distribution_cost.txt): the price of the adversarial input distributions. python_inprocess
# times BIN_DIR's `kloop verify` of the Triton example with the candidate host (the default) and
# with KLOOP_PYTHON_SPLIT=0 (the candidate in the checker's process), alternating, same build and
# gate: the price of the process split alone (python_inprocess.txt); the uncounted round 0 of each
# writes KLOOP_OP_TIMES (python_inprocess_ops_SIDE.jsonl). filtered
# runs the GPU test binaries with GTEST_GPU and GTEST_PYTHON as --gtest_filter (either may be
# empty: that binary is skipped). Every step is time-boxed; results go to $OUT (or /tmp/kloop-gpu).
set -u
bin=$(cd "$1" && pwd -P)
before=${2:-}
rounds=${3:-3}
out=${OUT:-/tmp/kloop-gpu}
mkdir -p "$out"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
cd /work/main
[ "$(pwd -P)/build" = "$bin" ] || ln -sfn "$bin" build
export KLOOP_HOME=/tmp/kloop-home KLOOP_TEST_PYTHON=$(command -v python3)
mkdir -p "$KLOOP_HOME/calibration" && cp tests/data/ncu/calibration_NVIDIA_H200.json "$KLOOP_HOME/calibration/NVIDIA_H200.json"

step() {  # step NAME SECONDS CMD...: output in $out/NAME.txt, exit status and time in $out/steps.txt
  local name=$1 secs=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout "$secs" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s" | tee -a "$out/steps.txt"
}

timed() {  # timed LOG LABEL JSON CMD...: one timed round, its record in $out/JSON, "LABEL: exit RC S s" in $out/LOG
  local log=$1 label=$2 json=$3; shift 3
  local t0; t0=$(date +%s%N)
  timeout 300 "$@" > "$out/$json" 2>/dev/null
  local rc=$?
  echo "$label: exit $rc $(awk -v a="$t0" -v c="$(date +%s%N)" 'BEGIN { printf "%.2f", (c - a) / 1e9 }') s" | tee -a "$out/$log"
}

{ uname -r; nvidia-smi -L; date -u; grep -o 'landlock[^,]*' /sys/kernel/security/lsm 2>/dev/null; } > "$out/machine.txt" 2>&1
steps=${STEPS:-confinement_unit exploits_cuda rmsnorm_cuda exploits_cpu}
v="verify examples/rmsnorm-cuda --candidate examples/rmsnorm-cuda/versions/v4_hybrid.cu --json --shape r8192_h1024 --shape r16384_h4096"
if [ -n "${SKIP_TESTS:-}" ]; then :; else
for s in $steps; do
  case $s in
    confinement_unit) step confinement_unit 120 "$bin/tests/unit/platform/kloop.test.platform" --gtest_filter='Confinement*' ;;
    exploits_cuda) step exploits_cuda 480 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='*CudaExploit*' ;;
    rmsnorm_cuda) step rmsnorm_cuda 540 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='Example/RmsnormCuda*:*Broken*' ;;
    exploits_cpu) step exploits_cpu 420 "$bin/tests/integration/kloop.test.integration.exploits" ;;
    op_times) rm -f "$out/op_times.jsonl"
      step op_times 240 env KLOOP_OP_TIMES="$out/op_times.jsonl" "$bin/src/kloop" $v ;;
    python_gpu) step python_gpu 540 "$bin/tests/gpu/kloop.test.gpu.python" ;;
    python_cost)
      tv="verify examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --json"
      for i in $(seq 0 "$rounds"); do
        for side in confined unconfined; do
          u=""; [ $side = unconfined ] && u=1
          timed python_cost.txt "$side $i" "python_cost_${side}_$i.json" env KLOOP_UNCONFINED=$u "$bin/src/kloop" $tv
        done
      done ;;
    gate_cost)
      for ex in ${GATE_EXAMPLES:-cuda triton}; do
        gv=$v
        [ $ex = triton ] && gv="verify examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --json"
        for i in $(seq 0 "$rounds"); do
          for side in default held_out_0; do
            extra=""; [ $side = held_out_0 ] && extra="--held-out 0"
            timed gate_cost.txt "$ex $side $i" "gate_cost_${ex}_${side}_$i.json" "$bin/src/kloop" $gv $extra
          done
        done
      done ;;
    python_split)
      # The Python candidate host against the in-process Python runner of BEFORE_DIR, whose
      # worker package is BEFORE_DIR/python (git archive of that commit's python/ directory).
      [ -n "$before" ] || { echo "python_split needs BEFORE_DIR" | tee -a "$out/steps.txt"; continue; }
      bp=$(cd "$before" && pwd -P)
      tv="verify examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --json"
      for i in $(seq 0 "$rounds"); do
        for side in before after; do
          if [ $side = before ]; then exe=$bp/src/kloop; pdir=$bp/python; else exe=$bin/src/kloop; pdir=$(pwd -P)/python; fi
          timed python_split.txt "$side $i" "python_split_${side}_$i.json" env KLOOP_HOME=/tmp/kloop-home-py-$side KLOOP_PYTHON_DIR=$pdir "$exe" $tv ${SPLIT_ARGS:-}
        done
      done ;;
    distribution_cost)
      for ex in ${GATE_EXAMPLES:-cuda triton}; do
        one=/tmp/kloop-one-distribution/rmsnorm-$ex
        rm -rf "$one" && mkdir -p "$(dirname "$one")" && cp -r "examples/rmsnorm-$ex" "$one"
        sed -i 's/init = \["normal(0, 1)", "normal(0, 1000)", "uniform(-1e-6, 1e-6)", "const(0)"\]/init = "normal(0, 1)"/' "$one/op.toml"
        grep -q '"normal(0, 1000)"' "$one/op.toml" && { echo "$ex: the one-distribution copy still lists several" | tee -a "$out/distribution_cost.txt"; continue; }
        for i in $(seq 0 "$rounds"); do
          for side in declared one; do
            dir=examples/rmsnorm-$ex; [ $side = one ] && dir=$one
            cand=$dir/versions/v4_hybrid.cu; [ $ex = triton ] && cand=$dir/versions/v1_fused.py
            timed distribution_cost.txt "$ex $side $i" "distribution_cost_${ex}_${side}_$i.json" "$bin/src/kloop" verify "$dir" --candidate "$cand" --json
          done
        done
      done ;;
    python_inprocess)
      tv="verify examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --json"
      for i in $(seq 0 "$rounds"); do
        for side in host inprocess; do
          split=1; [ $side = inprocess ] && split=0
          ops=""; [ "$i" = 0 ] && ops=$out/python_inprocess_ops_$side.jsonl
          timed python_inprocess.txt "$side $i" "python_inprocess_${side}_$i.json" env KLOOP_PYTHON_SPLIT=$split KLOOP_OP_TIMES=$ops "$bin/src/kloop" $tv ${SPLIT_ARGS:-}
        done
      done ;;
    filtered)
      [ -n "${GTEST_GPU:-}" ] && step filtered_gpu 540 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter="$GTEST_GPU"
      [ -n "${GTEST_PYTHON:-}" ] && step filtered_python 540 "$bin/tests/gpu/kloop.test.gpu.python" --gtest_filter="$GTEST_PYTHON" ;;
    *) echo "unknown step '$s'" | tee -a "$out/steps.txt" ;;
  esac
done
fi

if [ -n "$before" ] && [ -z "${SKIP_CUDA_COMPARE:-}" ]; then
  # Each side with its own warm build cache; round 0 warms it (builds) and is not counted.
  b=$(cd "$before" && pwd -P)
  for i in $(seq 0 "$rounds"); do
    for side in before after; do
      dir=$bin; [ $side = before ] && dir=$b
      extra=""; [ $side = after ] && extra=${AFTER_ARGS:-}
      timed overhead.txt "$side $i" "verify_${side}_$i.json" env KLOOP_HOME=/tmp/kloop-home-$side "$dir/src/kloop" $v $extra
    done
  done
fi
tail -n 3 "$out"/*.txt | grep -E "PASSED|FAILED|passed|failed|exit" | head -40
