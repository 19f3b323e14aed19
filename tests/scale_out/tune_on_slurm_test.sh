#!/usr/bin/env bash
# `kloop tune --slurm` end to end on a single-node Slurm with two fake GPUs (single_node.sh), in a
# scratch loop on the CPU example examples/rmsnorm with versions/v4_tuned.cpp (kLanes in 16 32 64):
# the two points after the start race as the tasks of one job array against the start, each
# naming its fake GPU and node; their sources and records lie in DIR/batch-0; the end iteration is
# recorded; a tune killed after its batch was submitted, run again with the same DIR, resumes that
# job instead of submitting again.
# Usage: tune_on_slurm_test.sh KLOOP SOURCE_DIR    (exit 77: no usable Slurm here, skipped)
set -uo pipefail
kloop=$1
src=$2
source "$src/tests/scale_out/slurm_test_setup.sh" tune-slurm
scratch_loop
cp "$repo/rmsnorm/versions/v4_tuned.cpp" "$repo/rmsnorm/kernel.cpp"

tune=("$kloop" tune --slurm-gres gpu:1 "${quick[@]}")
(cd "$repo" && "${tune[@]}" --slurm "$work/t1") > "$work/out1.txt" 2>&1 || fail "kloop tune --slurm exited $? ($(tail -5 "$work/out1.txt"))"
for point in '#1 kLanes=16: ' '#2 kLanes=64: '; do
  line=$(grep -F "$point" "$work/out1.txt") || fail "no line for $point: $(cat "$work/out1.txt")"
  echo "$line" | grep -q ' vs kLanes=32' || fail "not raced against the start: $line"
  echo "$line" | grep -Eq ' \| on [01] on [^ ]+$' || fail "no fake GPU and node named: $line"
done
[ -f "$work/t1/batch-0/race-0.json" ] && [ -f "$work/t1/batch-0/race-1.json" ] || fail "the batch's records: $(ls -R "$work/t1")"
grep -q '^constexpr int kLanes = 16;' "$work/t1/batch-0/lane-0/variant/kernel.cpp" ||
  fail "lane 0's source is not the first point: $(grep -n kLanes "$work/t1/batch-0/lane-0/variant/kernel.cpp" | head -3)"
[ ! -d "$work/t1/batch-1" ] || fail "three points are one batch: $(ls "$work/t1")"
table=$(ls "$repo"/profile/rmsnorm-opt/tune_v1.md) || fail "no tune_v1.md"
grep -q -- '- engine: Slurm — a batch of up to 4 points' "$table" || fail "the table's header: $(head -12 "$table")"
grep -q '| verdict | device | note |' "$table" || fail "the table has no device column"
[ -f "$repo/profile/rmsnorm-opt/iter_v1/benchmark_result.json" ] || fail "no end iteration: $(tail -5 "$work/out1.txt")"

# Killed after its batch was submitted: the job goes on; the same command resumes it.
(cd "$repo" && exec "${tune[@]}" --slurm "$work/t2") > "$work/out2.txt" 2>&1 &
job=$(kill_after_submission $! "$work/t2/batch-0/slurm_state.json" "$work/out2.txt") || exit 1
(cd "$repo" && "${tune[@]}" --slurm "$work/t2") > "$work/out3.txt" 2>&1 || fail "the resumed tune exited $? ($(tail -5 "$work/out3.txt"))"
grep -q "resumed Slurm job $job" "$work/out3.txt" || fail "no resume of job $job: $(cat "$work/out3.txt")"
jobs=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['jobs']))" "$work/t2/batch-0/slurm_state.json")
[ "$jobs" = 1 ] || fail "the resume submitted again ($jobs jobs)"
[ -f "$repo/profile/rmsnorm-opt/iter_v2/benchmark_result.json" ] || fail "the resumed tune recorded no iteration"

# --slurm and --devices exclude each other.
(cd "$repo" && "$kloop" tune --slurm "$work/t3" --devices 2) > "$work/out4.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "--slurm with --devices: exit $rc, wanted 2"
echo "ok: kloop tune --slurm (a batch of 2 races on 2 fake GPUs, resume after kill -9)"
