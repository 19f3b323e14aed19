#!/usr/bin/env bash
# Records Nsight Compute captures of the rmsnorm-cuda example as parser test data
# (tests/data/ncu/). Run on a GPU machine; writes into OUT (default /tmp/kloop-ncu).
#
#   bench/ncu_capture_testdata.sh BIN_DIR
#
# BIN_DIR holds kloop, kloop-runner-cuda. Each capture profiles the candidate's kernels in one
# `kloop verify` (one shape used for gate and bench, so any launch has that shape) and is then
# re-read with `ncu -i … --csv --page raw` (the program's own output never mixes into the CSV).
set -u
bin=$1
out=${OUT:-/tmp/kloop-ncu}; mkdir -p "$out"
here=$(pwd -P)
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$here" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$here" /work/main; fi
cd /work/main
export KLOOP_HOME=/tmp/kloop-home
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
names='regex:^(fwd_kernel|fwd_v2_kernel|dx_kernel|dw_kernel|dw_partial_kernel|dw_final_kernel|bwd_v2_kernel|dw_reduce_kernel)$'
targeted="--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
op_for() {  # op_for N D -> op dir with one shape
  local d=/tmp/kloop-ncu-op-$1-$2; rm -rf "$d"; mkdir -p "$d"
  cp examples/rmsnorm-cuda/reference.cu "$d/"
  awk -v n="$1" -v dd="$2" '
    /^\[\[shapes\]\]/ { skip=1; next }
    /^\[modes\.fwd\]/ && !done { print "[[shapes]]\nname = \"r" n "_h" dd "\"\ndims = { N = " n ", D = " dd " }\nuse = [\"gate\", \"bench\"]\n"; done=1; skip=0 }
    /^\[/ && !/^\[\[shapes\]\]/ { skip=0 }
    !skip { print }' examples/rmsnorm-cuda/op.toml > "$d/op.toml"
  echo "$d"
}
capture() {  # capture NAME VERSION MODE N D COUNT SETARGS...
  local name=$1 v=$2 mode=$3 n=$4 d=$5 count=$6; shift 6
  local op; op=$(op_for "$n" "$d")
  echo "=== $name ($v $mode N=$n D=$d)"
  timeout 280 "$ncu" --clock-control none --target-processes all -k "$names" --kernel-name-base function \
      -c "$count" "$@" -f -o "$out/$name" \
      "$bin/kloop" verify "$op" --candidate examples/rmsnorm-cuda/versions/$v.cu --mode "$mode" \
      --max-time 0.2 --min-time 0 --min-samples 3 --no-bench > "$out/$name.log" 2>&1
  echo "ncu exit $?"; grep -E '^==(ERROR|WARNING)==' "$out/$name.log" | head -5
  "$ncu" -i "$out/$name.ncu-rep" --csv --page raw > "$out/$name.raw.csv" 2> "$out/$name.raw.err"
  "$ncu" -i "$out/$name.ncu-rep" --csv --page details > "$out/$name.details.csv" 2>/dev/null
  echo "rows $(wc -l < "$out/$name.raw.csv") cols $(head -1 "$out/$name.raw.csv" | tr ',' '\n' | wc -l)"
}
"$ncu" --version > "$out/ncu_version.txt" 2>&1
capture v2_fwd_r16384_h8192_targeted v2_fused fwd 16384 8192 1 $targeted
capture v2_bwd_r16384_h8192_targeted v2_fused bwd 16384 8192 2 $targeted
capture v0_fwd_r16384_h8192_targeted v0_naive fwd 16384 8192 1 $targeted
capture v1_bwd_r8192_h1024_full v1_rowwise bwd 8192 1024 3 --set full
capture v2_fwd_r512_h1024_targeted v2_fused fwd 512 1024 1 $targeted
capture v2_fwd_r2048_h4096_source v2_fused fwd 2048 4096 1 --section SourceCounters --import-source yes
"$ncu" -i "$out/v2_fwd_r2048_h4096_source.ncu-rep" --csv --page source --print-source cuda > "$out/v2_fwd_r2048_h4096_source.source.csv" 2>&1
# A filter that matches nothing: ncu's "No kernels were profiled" message, for the error path.
op=$(op_for 512 1024)
"$ncu" --clock-control none -k regex:^no_such_kernel$ -c 1 -f -o "$out/nomatch" "$bin/kloop" verify "$op" \
  --candidate examples/rmsnorm-cuda/versions/v2_fused.cu --mode fwd --no-bench > "$out/nomatch.log" 2>&1; echo "nomatch exit $?"
rm -f "$out"/*.ncu-rep.tmp
ls -la "$out"
