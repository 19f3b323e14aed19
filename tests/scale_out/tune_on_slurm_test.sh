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
work=$(mktemp -d /tmp/kloop-tune-slurm-test.XXXXXX)
cleanup() { bash "$src/tests/scale_out/single_node.sh" stop "$work/cluster" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(bash "$src/tests/scale_out/single_node.sh" start "$work/cluster")
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "single_node.sh start exited $rc"
eval "$out"

repo=$work/repo
mkdir -p "$repo" && cp -r "$src/examples/rmsnorm" "$repo/rmsnorm" && cp "$repo/rmsnorm/versions/v0_naive.cpp" "$repo/rmsnorm/kernel.cpp"
(cd "$repo" && git init -q && git config user.email t@localhost && git config user.name t && git add -A &&
   git commit -qm start) || fail "the scratch repository"
export KLOOP_MEMORY_DB=$work/memory.sqlite
quick=(--min-samples 5 --min-time 0.01 --max-time 0.2 --held-out 0)
(cd "$repo" && "$kloop" init rmsnorm --candidate rmsnorm/kernel.cpp --max-iterations 4 "${quick[@]}") > "$work/init.txt" 2>&1 ||
  fail "kloop init exited $? ($(tail -3 "$work/init.txt"))"
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
pid=$!
for _ in $(seq 600); do
  grep -q '"[0-9]' "$work/t2/batch-0/slurm_state.json" 2>/dev/null && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
job=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'][0])" "$work/t2/batch-0/slurm_state.json") ||
  fail "no job id in batch-0/slurm_state.json after the submission ($(tail -3 "$work/out2.txt"))"
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
