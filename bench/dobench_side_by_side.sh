#!/usr/bin/env bash
# kloop vs triton.testing.do_bench / do_bench_cudagraph on the same kernels and shapes, in one run
# (docs/perf.md): the forward pass of examples/rmsnorm-cuda's v2_fused (through its
# kernel.h ABI from Python) and of examples/rmsnorm-triton's v1_fused. RUNS alternating rounds of
# `kloop verify` and a fresh do_bench process per backend; then bench/side_by_side_summary.py.
#
#   bench/dobench_side_by_side.sh BIN_DIR OUT_DIR [RUNS=5]
#
# Needs a GPU, nvcc, python3 with torch and triton, kloop + kloop-runner-cuda in BIN_DIR/src.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
k="$(cd "$1" && pwd)/src/kloop"; out=$2; runs=${3:-5}
mkdir -p "$out"; cd "$here"
shapes="r8192_h1024 r16384_h4096 r32768_h2048"
shape_args=(); for s in $shapes; do shape_args+=(--shape "$s"); done
so="$out/v2_fused.so"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC --cudart=shared -Iinclude -o "$so" examples/rmsnorm-cuda/versions/v2_fused.cu || exit 1
for i in $(seq 1 "$runs"); do
  "$k" verify examples/rmsnorm-cuda --candidate examples/rmsnorm-cuda/versions/v2_fused.cu --mode fwd "${shape_args[@]}" \
      --json-out "$out/kloop_cuda_$i.json" > "$out/kloop_cuda_$i.txt" 2>&1
  python3 bench/dobench_rmsnorm.py --cuda-so "$so" $shapes > "$out/dobench_cuda_$i.json" 2> "$out/dobench_cuda_$i.err"
  "$k" verify examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --mode fwd "${shape_args[@]}" \
      --json-out "$out/kloop_triton_$i.json" > "$out/kloop_triton_$i.txt" 2>&1
  python3 bench/dobench_rmsnorm.py --triton examples/rmsnorm-triton/versions/v1_fused.py $shapes \
      > "$out/dobench_triton_$i.json" 2> "$out/dobench_triton_$i.err"
  echo "round $i done $(date -u +%T)"
done
rm -f "$so"
python3 bench/side_by_side_summary.py "$out" | tee "$out/summary.md"
