#!/usr/bin/env bash
# kloop on a GPU machine: the checks and figures of docs/perf.md, in parts that each fit a
# 10-minute device call. With two GPUs a part runs two independent streams at once, one per GPU
# (CUDA_VISIBLE_DEVICES; kloop matches NVML to the CUDA device by UUID); with one they run one
# after the other. Every step is time-boxed, and after each step the stream's results are packed
# into $OUT/gpuN.tar.gz, so a part cut short still returns what it finished. In it, each step's
# output is STEP.txt (and STEP.json where kloop writes one), with exit status and time in steps.txt;
# docs/perf.md names the part and step behind each figure.
#
#   bench/h200_session.sh PART BIN_DIR      # stream A (GPU 0) | stream B (GPU 1)
#
#   loop                the loop on rmsnorm-cuda with profiles | the GPU test binaries (CUDA, Python)
#   figures             ncu agreement, 5-run stability of v2, side_stream | do_bench side by side, A/B noise of v2
#   compare             compare v2 vs v0 and vs v1 | iteration wall time vs an FLA-style loop (5 rounds)
#   v3-stability        profile GPU tests, 5-run stability of v2, side_stream, A/B noise of v2, FLA-style wall
#                       time | Python GPU tests, v3 verify and v3 vs v2, ncu agreement, do_bench side by side
#   side-stream-noise   profile GPU tests, side_stream (verify and A/B), A/B noise of v2 (20 runs)
#                       | Python GPU tests, FLA-style wall time (5 rounds)
#   read-flush          ncu agreement with the read and the write flush, re-calibration, the CUDA GPU tests
#                       | the worker's pytest suite, worker profiles, v4 vs v2 and vs v3, FLA-style wall time
#   end-event           ncu agreement with the end event on the legacy and on the runner's stream, the
#                       rmsnorm-cuda GPU tests, v4 vs v2, side_stream through the A/B | A/B noise of v2 (20 runs)
#   v4                  v4 vs v2, 5-run stability of v4, do_bench side by side (3 rounds)
#                       | FLA-style wall time (3 rounds), Python GPU tests
#   triton-versions     the Triton version tests | FLA-style wall time (2 rounds)
#   fork-startup        Python worker start costs, Triton broken candidates, rmsnorm-cuda GPU tests
#                       | FLA-style wall time with `kloop iterate` (1 round)
#   fork-server         the worker's pytest suite, Python GPU tests | FLA-style wall time with `kloop iterate`
#                       and the fork server off (2 rounds), worker profiles
#   python-walltime     Python GPU tests | the same wall times (2 rounds), worker profiles
#   interpret-walltime  the Triton interpreter tests, the worker's pytest suite | the same wall times (2 rounds)
#   early-verdict       Triton compare and loop tests, A/B noise of the Triton example | FLA-style wall time
#                       with `kloop iterate` (2 rounds), A/B noise of the CUDA example
#
# BIN_DIR holds src/{kloop,kloop-runner,kloop-runner-cuda} and tests/gpu/kloop.test.gpu{,.python},
# built on the dev machine under /work/main (the test binaries read /work/main/build-gpu, which
# is linked to BIN_DIR; when this checkout lives elsewhere, /work/main is linked to it).
set -u
part=$1; bin=$(cd "$2" && pwd -P)
out=${OUT:-/tmp/kloop-gpu}; results=/tmp/kloop-results; rm -rf "$results"; mkdir -p "$out" "$results"; r=$results
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
cd /work/main
[ "$(pwd -P)/gpu-bin" = "$bin" ] && ln -sfn gpu-bin build-gpu
k=$bin/src/kloop
ex=examples/rmsnorm-cuda
quick="--min-samples 10 --min-time 0.05 --max-time 0.3"
if ! python3 -c 'import pytest' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export KLOOP_TEST_PYTHON=$(command -v python3)
{ nvidia-smi; date -u; echo "git: $(command -v git)"; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } > "$r/machine.txt" 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

step() {  # step NAME SECONDS CMD...   (output in $r/NAME.txt, exit and time in $r/steps.txt)
  local name=$1 secs=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout "$secs" "$@" > "$r/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s (GPU ${CUDA_VISIBLE_DEVICES:-all})" | tee -a "$r/steps.txt"
  tar -czf "$out/.$(basename "$r").tar.gz" -C "$r" . && mv "$out/.$(basename "$r").tar.gz" "$out/$(basename "$r").tar.gz"
}
on_gpu() {  # on_gpu INDEX FUNCTION: the stream with its own GPU and KLOOP_HOME (seeded with the committed calibration)
  export CUDA_VISIBLE_DEVICES=$1 KLOOP_HOME=/tmp/kloop-home-$1
  r=$results/gpu$1; mkdir -p "$r"; cp "$results/machine.txt" "$r/"
  mkdir -p "$KLOOP_HOME/calibration" && cp tests/data/ncu/calibration_NVIDIA_H200.json "$KLOOP_HOME/calibration/NVIDIA_H200.json"
  "$2"
}
streams() {  # streams FN_A FN_B: in parallel on GPUs 0 and 1, or one after the other on GPU 0
  if [ "$ngpu" -ge 2 ]; then
    (on_gpu 0 "$1") & (on_gpu 1 "$2") & wait
  else
    (on_gpu 0 "$1"); (on_gpu 0 "$2")
  fi
}

# The loop on rmsnorm-cuda in a scratch git repository: v0 → v1 → v2, each profiled (targeted +
# full per mode), then best, nogo and report; the workspace's text and CSV come back.
loop_a() {
  local repo=/tmp/kloop-loop; rm -rf "$repo"; mkdir -p "$repo"; cp -r $ex "$repo/op"
  (cd "$repo" && git init -q && git add -A && git -c user.email=k@l -c user.name=kloop commit -qm init)
  cp $ex/versions/v0_naive.cu "$repo/op/kernel.cu"
  step loop_init 200 "$k" init "$repo/op" --candidate "$repo/op/kernel.cu" --max-iterations 4 --workspace "$repo/ws" $quick
  printf 'Direction: one block per row, 128-bit loads (v1)\nExpected: memory-bound, >= 3x over v0\n\n## Strategy tags\n- vectorize\n- block-per-row\n' > "$repo/p1.md"
  cp $ex/versions/v1_rowwise.cu "$repo/op/kernel.cu"
  step loop_iterate_v1 170 "$k" iterate --workspace "$repo/ws" --candidate "$repo/op/kernel.cu" --proposal "$repo/p1.md" $quick
  printf 'Direction: fused, vectorised rows, register-resident (v2)\nExpected: DRAM-bound, faster than v1\n\n## Strategy tags\n- fusion\n- vectorize\n' > "$repo/p2.md"
  cp $ex/versions/v2_fused.cu "$repo/op/kernel.cu"
  step loop_iterate_v2 170 "$k" iterate --workspace "$repo/ws" --candidate "$repo/op/kernel.cu" --proposal "$repo/p2.md" $quick
  step loop_best 20 "$k" best --workspace "$repo/ws"
  step loop_best_json 20 "$k" best --workspace "$repo/ws" --json
  step loop_nogo 20 "$k" nogo --workspace "$repo/ws"
  step loop_report 120 "$k" report --workspace "$repo/ws"
  mkdir -p "$r/ws"; cp "$repo"/ws/*.md "$r/ws/" 2>/dev/null
  for d in "$repo"/ws/iter_v*; do
    mkdir -p "$r/ws/$(basename "$d")"; cp "$d"/*.md "$d"/*.json "$d"/*.csv "$r/ws/$(basename "$d")/" 2>/dev/null
  done
}
tests_b() {
  step gtest_gpu 280 "$bin/tests/gpu/kloop.test.gpu"
  step gtest_python 280 "$bin/tests/gpu/kloop.test.gpu.python"
}

# Agreement with ncu (copy, 16 MiB and 256 MiB moved), the median's stability over 5 separate
# `kloop verify` runs of v2 (every shape, both modes, default stopping rule), the side_stream cheat.
figures_a() {
  step agreement 170 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432
  for i in 1 2 3 4 5; do
    step stability_$i 60 "$k" verify $ex --candidate $ex/versions/v2_fused.cu --json-out "$r/stability_$i.json"
  done
  step side_stream 120 "$k" verify $ex --candidate $ex/broken/side_stream.cu --mode fwd --shape r16384_h8192 --max-time 0.5 --json-out "$r/side_stream.json"
}
# kloop vs do_bench on the same kernels, 5 rounds; A against A on the CUDA example, 20 runs.
figures_b() {
  step dobench 300 bash bench/dobench_side_by_side.sh "$bin" "$r/dobench" 5
  step noise_v2 240 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --runs 20 --shape r8192_h1024 --shape r16384_h8192 --json-out "$r/noise_v2.json"
}

compare_a() {
  step compare_v2_v0 200 "$k" compare $ex --candidate $ex/versions/v2_fused.cu --base $ex/versions/v0_naive.cu --json-out "$r/compare_v2_v0.json"
  step compare_v2_v1 200 "$k" compare $ex --candidate $ex/versions/v2_fused.cu --base $ex/versions/v1_rowwise.cu --json-out "$r/compare_v2_v1.json"
}
compare_b() {
  step fla_walltime 420 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 5
}

# Part v3-stability: the profile GPU tests, the median's stability over 5 `kloop verify` runs of v2,
# the side_stream cheat, A/B noise of v2, the FLA-style wall time | the Python GPU tests, v3 (verify,
# and compare against v2), ncu agreement, do_bench side by side.
v3_stability_a() {
  step gtest_profile 120 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='GpuProfileTest.*'
  for i in 1 2 3 4 5; do
    step stability_$i 50 "$k" verify $ex --candidate $ex/versions/v2_fused.cu --json-out "$r/stability_$i.json"
  done
  step side_stream 40 "$k" verify $ex --candidate $ex/broken/side_stream.cu --mode fwd --shape r16384_h8192 --max-time 0.5 --json-out "$r/side_stream.json"
  step noise_v2 130 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --runs 20 --shape r8192_h1024 --shape r16384_h8192 --json-out "$r/noise_v2.json"
  step fla_walltime 150 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 3
}
v3_stability_b() {
  step gtest_python 240 "$bin/tests/gpu/kloop.test.gpu.python"
  step verify_v3 90 "$k" verify $ex --candidate $ex/versions/v3_wide.cu --json-out "$r/verify_v3.json"
  step compare_v3_v2 120 "$k" compare $ex --candidate $ex/versions/v3_wide.cu --base $ex/versions/v2_fused.cu --json-out "$r/compare_v3_v2.json"
  mkdir -p "$r/agreement"
  TMPDIR=$r/agreement step agreement 100 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432
  step dobench 300 bash bench/dobench_side_by_side.sh "$bin" "$r/dobench" 5
}

# Part side-stream-noise: the profile GPU tests, the side_stream cheat through `kloop verify` and
# through the A/B, A/B noise of v2 (20 runs) | the Python GPU tests, the FLA-style wall time (5 rounds).
side_stream_noise_a() {
  step gtest_profile 120 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='GpuProfileTest.*'
  step side_stream 60 "$k" verify $ex --candidate $ex/broken/side_stream.cu --mode fwd --json-out "$r/side_stream.json"
  step side_stream_ab 90 "$k" compare $ex --candidate $ex/broken/side_stream.cu --base $ex/versions/v1_rowwise.cu --mode fwd --json-out "$r/side_stream_ab.json"
  step noise_v2 280 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --runs 20 --shape r8192_h1024 --shape r16384_h8192 --json-out "$r/noise_v2.json"
}
side_stream_noise_b() {
  step gtest_python 240 "$bin/tests/gpu/kloop.test.gpu.python"
  step fla_walltime 300 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 5
}

# Part read-flush: ncu agreement with the read flush (the default) and the write flush
# (KLOOP_CUDA_FLUSH=write) side by side, the copy bandwidth re-calibrated, the CUDA GPU tests (the
# rmsnorm-cuda versions and broken candidates among them) | the Python worker's pytest suite, where
# a Triton iteration's time goes (worker profiles), v4 against v2 and v3, the FLA-style wall time.
read_flush_a() {
  mkdir -p "$r/agreement_read" "$r/agreement_write"
  TMPDIR=$r/agreement_read step agreement_read 80 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432
  KLOOP_CUDA_FLUSH=write TMPDIR=$r/agreement_write step agreement_write 80 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432
  rm -f "$KLOOP_HOME/calibration/NVIDIA_H200.json"
  step calibrate 90 "$k" preflight --calibrate --no-python --calibrate-max-time 1
  cp "$KLOOP_HOME"/calibration/*.json "$r/" 2>/dev/null
  step gtest_gpu 300 "$bin/tests/gpu/kloop.test.gpu"
}
read_flush_b() {
  step pytest_worker 60 bash -c "cd python && python3 -m pytest -q tests"
  step worker_profile 150 bash bench/python_worker_profile.sh "$bin" "$r/worker_profile"
  rm -f "$r"/worker_profile/*.prof
  step compare_v4_v2 100 "$k" compare $ex --candidate $ex/versions/v4_hybrid.cu --base $ex/versions/v2_fused.cu --json-out "$r/compare_v4_v2.json"
  step compare_v4_v3 100 "$k" compare $ex --candidate $ex/versions/v4_hybrid.cu --base $ex/versions/v3_wide.cu --json-out "$r/compare_v4_v3.json"
  step fla_walltime 130 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
}
# Part end-event: ncu agreement (3 sizes) with the end event on the legacy stream (the default) and
# on the runner's own stream (KLOOP_CUDA_END_EVENT=stream, diagnostic), the rmsnorm-cuda GPU tests,
# v4 against v2, the side_stream cheat through the A/B | A against A on v2, 20 runs.
end_event_a() {
  mkdir -p "$r/agreement_legacy" "$r/agreement_stream"
  TMPDIR=$r/agreement_legacy step agreement_legacy 70 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432 134217728
  KLOOP_CUDA_END_EVENT=stream TMPDIR=$r/agreement_stream step agreement_stream 70 bash bench/gpu_timing_agreement.sh --build "$bin" --ncu 2097152 33554432 134217728
  step gtest_rmsnorm 200 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='*RmsnormCuda*'
  step compare_v4_v2 80 "$k" compare $ex --candidate $ex/versions/v4_hybrid.cu --base $ex/versions/v2_fused.cu --json-out "$r/compare_v4_v2.json"
  step side_stream_ab 40 "$k" compare $ex --candidate $ex/broken/side_stream.cu --base $ex/versions/v1_rowwise.cu --mode fwd --json-out "$r/side_stream_ab.json"
}
end_event_b() {
  step noise_v2 500 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --runs 20 --shape r8192_h1024 --shape r16384_h8192 --json-out "$r/noise_v2.json"
}
# Part v4: v4 against v2, 5-run stability of v4, do_bench side by side (3 rounds) | the iteration
# wall time against an FLA-style loop (3 rounds), the Python GPU tests.
v4_a() {
  step compare_v4_v2 110 "$k" compare $ex --candidate $ex/versions/v4_hybrid.cu --base $ex/versions/v2_fused.cu --json-out "$r/compare_v4_v2.json"
  for i in 1 2 3 4 5; do
    step stability_$i 40 "$k" verify $ex --candidate $ex/versions/v4_hybrid.cu --json-out "$r/stability_$i.json"
  done
  step dobench 220 bash bench/dobench_side_by_side.sh "$bin" "$r/dobench" 3
}
v4_b() {
  step fla_walltime 230 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 3
  step gtest_python 290 "$bin/tests/gpu/kloop.test.gpu.python"
}

# Part triton-versions: the Triton version tests | the FLA-style wall time, 2 rounds.
triton_versions_a() {
  step gtest_triton_versions 150 "$bin/tests/gpu/kloop.test.gpu.python" --gtest_filter='*TritonVersionTest*'
}
triton_versions_b() {
  step fla_walltime 170 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
}

# Part fork-startup: what a Python worker's start costs and what forking a warmed parent saves, the
# Triton broken candidates and the rmsnorm-cuda tests of the example |
# the loop's own iteration (`kloop iterate`) against the FLA-style loop.
fork_startup_a() {
  step fork_startup 90 python3 bench/python_fork_startup.py 3
  step gtest_triton_broken 150 "$bin/tests/gpu/kloop.test.gpu.python" --gtest_filter='*TritonBroken*'
  step gtest_rmsnorm 200 "$bin/tests/gpu/kloop.test.gpu" --gtest_filter='*RmsnormCuda*'
}
fork_startup_b() {
  step fla_walltime 280 env ITERATE=1 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 1
}

# Part fork-server: the fork server — the Python GPU tests and the worker's own tests through it | an
# iteration's wall time with and without it, beside the FLA-style loop; the workers' profiles.
fork_server_a() {
  step pytest_worker 90 bash -c "cd python && python3 -m pytest -q tests"
  step gtest_python 420 "$bin/tests/gpu/kloop.test.gpu.python"
}
fork_server_b() {
  step fla_walltime 330 env ITERATE=1 FRESH=1 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
  step worker_profile 90 bash bench/python_worker_profile.sh "$bin" "$r/worker_profile"
  rm -f "$r"/worker_profile/*.prof
}

# Part python-walltime: the Python GPU tests (the interpreter test with the fork server on and off) |
# an iteration's wall time with and without the fork server, beside the FLA-style loop; the workers'
# profiles.
python_walltime_a() {
  step gtest_python 400 "$bin/tests/gpu/kloop.test.gpu.python"
}
python_walltime_b() {
  step fla_walltime 390 env ITERATE=1 FRESH=1 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
  step worker_profile 60 bash bench/python_worker_profile.sh "$bin" "$r/worker_profile"
  rm -f "$r"/worker_profile/*.prof
}

# Part interpret-walltime: the Triton interpreter tests and the worker's own tests | an iteration's
# wall time with and without the fork server, beside the FLA-style loop, 2 rounds.
interpret_walltime_a() {
  step gtest_interpret 90 "$bin/tests/gpu/kloop.test.gpu.python" --gtest_filter='*TritonInterpret*'
  step pytest_worker 90 bash -c "cd python && python3 -m pytest -q tests"
}
interpret_walltime_b() {
  step fla_walltime 280 env ITERATE=1 FRESH=1 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
}

# Part early-verdict: with the early verdict (a shape stops once its verdict is settled) — the Triton
# compare and loop tests, A against A on the Triton example | an iteration's wall time (`kloop
# compare` and `kloop iterate`) beside the FLA-style loop, A against A on the CUDA example.
early_verdict_a() {
  step gtest_triton_ab 120 "$bin/tests/gpu/kloop.test.gpu.python" --gtest_filter='TritonCompare*:TritonLoop*'
  step noise_triton 100 "$k" noise examples/rmsnorm-triton --candidate examples/rmsnorm-triton/versions/v1_fused.py --runs 8 --json-out "$r/noise_triton.json"
}
early_verdict_b() {
  step fla_walltime 150 env ITERATE=1 bash bench/fla_style_walltime.sh "$bin" "$r/fla" 2
  step noise_cuda 90 "$k" noise $ex --candidate $ex/versions/v2_fused.cu --runs 10 --json-out "$r/noise_cuda.json"
}

case $part in
loop) streams loop_a tests_b ;;
figures) streams figures_a figures_b ;;
compare) streams compare_a compare_b ;;
v3-stability) streams v3_stability_a v3_stability_b ;;
side-stream-noise) streams side_stream_noise_a side_stream_noise_b ;;
read-flush) streams read_flush_a read_flush_b ;;
end-event) streams end_event_a end_event_b ;;
v4) streams v4_a v4_b ;;
triton-versions) streams triton_versions_a triton_versions_b ;;
fork-startup) streams fork_startup_a fork_startup_b ;;
fork-server) streams fork_server_a fork_server_b ;;
python-walltime) streams python_walltime_a python_walltime_b ;;
interpret-walltime) streams interpret_walltime_a interpret_walltime_b ;;
early-verdict) streams early_verdict_a early_verdict_b ;;
*) echo "unknown part '$part' (loop, figures, compare, v3-stability, side-stream-noise, read-flush, end-event, v4, triton-versions, fork-startup, fork-server, python-walltime, interpret-walltime, early-verdict)" >&2; exit 2 ;;
esac
ls -la "$out"
