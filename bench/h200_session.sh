#!/usr/bin/env bash
# kloop on a GPU machine: the checks and figures of docs/perf.md, in parts that each fit a
# 10-minute device call. Every step is time-boxed; all results are packed into one archive,
# $OUT/results.tar.gz (the device tool returns at most 8 files).
#
#   bench/h200_session.sh short BIN_DIR     # calibration, kloop profile of v2 (fwd), the profile GPU tests
#   bench/h200_session.sh profile BIN_DIR   # GPU tests, calibration, kloop profile, the loop with profiles
#   bench/h200_session.sh figures BIN_DIR   # compare, A/B noise, ncu agreement, 5-run stability
#
# BIN_DIR holds kloop, kloop-runner, kloop-runner-cuda (built on the dev machine under /work/main;
# when this checkout lives elsewhere, /work/main is linked to it so the build's paths resolve).
set -u
part=$1; bin=$(cd "$2" && pwd -P)
out=${OUT:-/tmp/kloop-gpu}; r=/tmp/kloop-results; rm -rf "$r"; mkdir -p "$out" "$r"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
cd /work/main
export KLOOP_HOME=/tmp/kloop-home
k=$bin/src/kloop
ex=examples/rmsnorm-cuda
quick="--min-samples 10 --min-time 0.05 --max-time 0.3 --check-every 64"
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout "$secs" "$@" > "$r/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s" | tee -a "$r/steps.txt"
}
case $part in
short)   # what fits in ~4 minutes: calibration, kloop profile of the best version, the profile GPU tests
  { nvidia-smi; date -u; } > "$r/machine.txt" 2>&1
  step calibrate 40 "$k" preflight --calibrate --no-python --calibrate-max-time 1
  cp -r "$KLOOP_HOME/calibration" "$r/" 2>/dev/null
  step profile_v2_fwd 75 "$k" profile $ex --candidate $ex/versions/v2_fused.cu --mode fwd --set targeted --set full --out "$r/profile_v2" --json
  rm -f "$r"/profile_v2/*.ncu-rep
  step gtest_profile 100 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='GpuProfileTest.*'
  ;;
profile)
  { nvidia-smi; date -u; } > "$r/machine.txt" 2>&1
  step gtest_gpu 200 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='GpuProfileTest.*:GpuCopyTest.GoodCandidatePassesAndIsTimed'
  step calibrate 90 "$k" preflight --calibrate --no-python
  cp -r "$KLOOP_HOME/calibration" "$r/" 2>/dev/null
  step profile_v2 200 "$k" profile $ex --candidate $ex/versions/v2_fused.cu --set targeted --set full --out "$r/profile_v2" --json
  rm -f "$r"/profile_v2/*.ncu-rep
  repo=/tmp/kloop-loop; rm -rf "$repo"; mkdir -p "$repo"; cp -r examples/rmsnorm-cuda "$repo/op"
  (cd "$repo" && git init -q && git add -A && git -c user.email=k@l -c user.name=kloop commit -qm init)
  cp $ex/versions/v0_naive.cu "$repo/op/kernel.cu"
  step loop_init 150 "$k" init "$repo/op" --candidate "$repo/op/kernel.cu" --max-iterations 3 --workspace "$repo/ws" $quick
  printf 'Direction: fused, vectorised rows (v2)\nExpected: DRAM-bound, >= 5x over v0\n\n## Strategy tags\n- fusion\n- vectorize\n' > "$repo/prop.md"
  cp $ex/versions/v2_fused.cu "$repo/op/kernel.cu"
  step loop_iterate 200 "$k" iterate --workspace "$repo/ws" --candidate "$repo/op/kernel.cu" --proposal "$repo/prop.md" $quick
  step loop_best 20 "$k" best --workspace "$repo/ws"
  step loop_nogo 20 "$k" nogo --workspace "$repo/ws"
  mkdir -p "$r/ws"; cp "$repo"/ws/*.md "$r/ws/" 2>/dev/null
  for d in "$repo"/ws/iter_v*; do mkdir -p "$r/ws/$(basename $d)"; cp "$d"/*.md "$d"/*.json "$d"/*.raw.csv "$r/ws/$(basename $d)/" 2>/dev/null; done
  ;;
figures)
  { nvidia-smi; date -u; } > "$r/machine.txt" 2>&1
  step compare_v2_v0 150 "$k" compare $ex --candidate $ex/versions/v2_fused.cu --base $ex/versions/v0_naive.cu --max-time 0.5 --check-every 64 --json-out "$r/compare_v2_v0.json"
  step noise_v2 120 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --mode fwd --runs 5 --max-time 0.3 --check-every 64
  step agreement 150 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432
  for i in 1 2 3 4 5; do
    step stability_$i 40 "$k" verify $ex --candidate $ex/versions/v2_fused.cu --mode fwd --max-time 1 --check-every 64 --json-out "$r/stability_$i.json"
  done
  ;;
esac
tar -czf "$out/results.tar.gz" -C "$r" .
ls -la "$out"
