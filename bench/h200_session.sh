#!/usr/bin/env bash
# kloop on a GPU machine: the checks and figures of docs/perf.md, in two parts that each fit a
# 10-minute device call. Results go to $OUT (or /tmp/kloop-gpu).
#
#   bench/h200_session.sh part1 BUILD_DIR   # preflight, ctest -L gpu, verify versions + broken
#   bench/h200_session.sh part2 BUILD_DIR   # compare, noise, timing agreement with ncu, stability
#
# BUILD_DIR was configured on the dev machine under /work/main; when this checkout lives
# elsewhere, /work/main is linked to it so the absolute paths in the build tree resolve.
set -u
part=$1; build=$2
out=${OUT:-/tmp/kloop-gpu}; mkdir -p "$out"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
cd /work/main
export KLOOP_HOME=/tmp/kloop-home
k=$build/src/kloop
ex=examples/rmsnorm-cuda
case $part in
part1)
  { nvidia-smi; $k preflight --json; } > "$out/preflight.txt" 2>&1
  ctest --test-dir "$build" -L gpu --output-on-failure --timeout 240 > "$out/ctest_gpu.txt" 2>&1
  for v in v0_naive v1_rowwise v2_fused; do
    echo "=== $v"; $k verify $ex --candidate $ex/versions/$v.cu --json-out "$out/verify_$v.json"; echo "exit $?"
  done > "$out/verify_versions.txt" 2>&1
  for b in $ex/broken/*.cu; do
    echo "=== $b"; $k verify $ex --candidate "$b" --timeout 120 --max-time 1; echo "exit $?"
  done > "$out/verify_broken.txt" 2>&1
  ;;
part2)
  { $k compare $ex --candidate $ex/versions/v1_rowwise.cu --base $ex/versions/v0_naive.cu
    $k compare $ex --candidate $ex/versions/v2_fused.cu --base $ex/versions/v1_rowwise.cu; } > "$out/compare.txt" 2>&1
  $k noise $ex --candidate $ex/versions/v1_rowwise.cu --runs 5 --max-time 1 > "$out/noise.txt" 2>&1
  bash bench/gpu_timing_agreement.sh --build "$build" --ncu 2097152 33554432 > "$out/agreement.txt" 2>&1
  for i in 1 2 3 4 5; do
    $k verify $ex --candidate $ex/versions/v2_fused.cu --mode fwd --json-out "$out/stability_$i.json" > /dev/null 2>&1
  done
  ;;
esac
ls -la "$out"
