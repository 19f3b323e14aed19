#!/usr/bin/env bash
# `kloop run --parallel 2 --slurm DIR` end to end on a single-node Slurm with two fake GPUs
# (single_node.sh), in a scratch loop on the CPU example examples/rmsnorm with the scripted
# proposer (tests/fixtures/proposer/scripted_proposer.sh):
#   round 1 — a faster version and a wrong one are evaluated as the tasks of one job array, each by
#   `kloop evaluate-sibling` in its task directory: the faster one is promoted, the wrong one is
#   rejected by the gate (as a local round would), each record names its fake GPU and node;
#   round 2 — kloop is killed after the round's job was submitted; the same command waits for that
#   job instead of submitting again and records both siblings;
#   a task directory of another run is refused; a proposer that plants a record in the Slurm
#   directory ends the run (exit 5); --slurm without --parallel, and with --devices, is a usage error.
# Usage: run_on_slurm_test.sh KLOOP SOURCE_DIR    (exit 77: no usable Slurm here, skipped)
set -uo pipefail
kloop=$1
src=$2
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
source "$src/tests/scale_out/slurm_test_setup.sh" run-slurm
scratch_loop
ws=$repo/profile/rmsnorm-opt

plan=$work/plan
printf '%s\n' "submit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100" \
  "submit|broken/wrong_result.cpp|skip tail|speedup 1-2" \
  "submit|versions/v4_tuned.cpp|tuning|speedup 1-100" \
  "submit|versions/v2_streaming.cpp|streaming|speedup 1-100" done done > "$plan"
run=("$kloop" run --proposer "bash '$src/tests/fixtures/proposer/scripted_proposer.sh' '$plan'" --parallel 2
     --slurm-gres gpu:1 "${quick[@]}")

# Round 1: one job array, both siblings evaluated on their nodes, recorded here.
(cd "$repo" && "${run[@]}" --iterations 2 --slurm "$work/s1") > "$work/out1.txt" 2>&1 ||
  fail "kloop run --slurm exited $? ($(tail -5 "$work/out1.txt"))"
for n in 1 2; do
  line=$(grep "^attempt $n: " "$work/out1.txt") || fail "no line for attempt $n: $(cat "$work/out1.txt")"
  echo "$line" | grep -Eq ' \| on [01] on [^ ]+$' || fail "attempt $n names no fake GPU and node: $line"
  [ -f "$work/s1/round-1/attempt-00$n/evaluated.json" ] || fail "no record of attempt $n: $(ls -R "$work/s1" | head -30)"
  device=$(json "$ws/iter_v$n/benchmark_result.json" "d['iteration']['device']")
  echo "$device" | grep -Eq '^[01] on ' || fail "v$n's record names no device: $device"
done
[ -f "$work/s1/round-1/array-1-2/slurm_state.json" ] || fail "no array state: $(ls "$work/s1/round-1")"
[ "$(json "$work/s1/round-1/array-1-2/slurm_state.json" "len(d['jobs'])")" = 1 ] || fail "round 1 was not one job"
grep -q 'evaluate-sibling' "$work/s1/round-1/array-1-2/task-0.sh" || fail "the task is not kloop evaluate-sibling"
grep -q -- '--min-samples' "$work/s1/round-1/array-1-2/task-0.sh" || fail "the timing options were not forwarded"
grep -q -- '--proposer' "$work/s1/round-1/array-1-2/task-0.sh" && fail "the run's own options were forwarded"
[ "$(json "$ws/iter_v2/benchmark_result.json" "d['iteration']['status']")" = rejected ] ||
  fail "the wrong sibling was not rejected: $(grep '^attempt 2' "$work/out1.txt")"
[ "$(json "$ws/iter_v2/benchmark_result.json" "d['iteration']['rejection']")" = gate ] ||
  fail "the wrong sibling was not rejected by the gate: $(grep '^attempt 2' "$work/out1.txt")"
status1=$(json "$ws/iter_v1/benchmark_result.json" "d['iteration']['status']")
if [ "$status1" = positive ]; then
  cmp -s "$repo/rmsnorm/kernel.cpp" "$repo/rmsnorm/versions/v1_rowwise.cpp" || fail "the kernel file is not the promoted v1"
fi
# The evaluation is the node's: its A/B report came back whole, with the node's device.
[ "$(json "$ws/iter_v1/benchmark_result.json" "d['ab']['kind']")" = kloop.compare ] || fail "v1 has no A/B report"
json "$ws/iter_v1/benchmark_result.json" "d['ab']['device_host']" | grep -q . || fail "v1's A/B names no node"

# Round 2: killed after its job was submitted; the same command resumes that job.
(cd "$repo" && exec "${run[@]}" --slurm "$work/s1") > "$work/out2.txt" 2>&1 &
state=$work/s1/round-2/array-3-4/slurm_state.json
job=$(kill_after_submission $! "$state" "$work/out2.txt") || exit 1
(cd "$repo" && "${run[@]}" --slurm "$work/s1") > "$work/out3.txt" 2>&1 || fail "the resumed run exited $? ($(tail -5 "$work/out3.txt"))"
grep -q "resumed Slurm job $job" "$work/out3.txt" || fail "no resume of job $job: $(cat "$work/out3.txt")"
[ "$(json "$state" "len(d['jobs'])")" = 1 ] || fail "the resume submitted again: $(cat "$state")"
for n in 3 4; do
  [ -f "$ws/iter_v$n/benchmark_result.json" ] || fail "the resumed run recorded no v$n: $(tail -5 "$work/out3.txt")"
  grep -Eq "^attempt $n: v$n: .* \| on [01] on " "$work/out3.txt" || fail "attempt $n: $(cat "$work/out3.txt")"
done

# A task directory holding another run's task is refused before anything is submitted.
rm -rf "$work/s2" && mkdir -p "$work/s2/round-1" && cp -r "$work/s1/round-1/attempt-002" "$work/s2/round-1/attempt-001"
mv "$ws" "$work/ws-done"
scratch_loop "$work/init2.txt"
(cd "$repo" && "${run[@]}" --iterations 2 --slurm "$work/s2") > "$work/out4.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "another run's task directory: exit $rc, wanted 2 ($(tail -3 "$work/out4.txt"))"
grep -q "holds another run's task" "$work/out4.txt" || fail "the refusal does not say why: $(tail -3 "$work/out4.txt")"
[ ! -e "$work/s2/round-1/array-1-2/slurm_state.json" ] || fail "a job was submitted for a refused round"

# A proposer that writes into the Slurm directory (a planted record) ends the run (exit 5).
mv "$ws" "$work/ws-refused"
scratch_loop "$work/init3.txt"
printf '%s\n' "submit|versions/v1_rowwise.cpp|vectorization|speedup 1.2-100" "write|$work/s4/round-1/attempt-001/evaluated.json" > "$work/plan2"
(cd "$repo" && "$kloop" run --proposer "bash '$src/tests/fixtures/proposer/scripted_proposer.sh' '$work/plan2'" --parallel 2 \
   "${quick[@]}" --slurm "$work/s4") > "$work/out7.txt" 2>&1
rc=$?
[ $rc = 5 ] || fail "a proposer writing into the Slurm directory: exit $rc, wanted 5 ($(tail -3 "$work/out7.txt"))"
grep -q "changed the Slurm directory $work/s4.*added round-1/attempt-001/evaluated.json" "$work/out7.txt" ||
  fail "the tamper is not named: $(tail -3 "$work/out7.txt")"
[ ! -d "$work/s4/round-1/array-1-2" ] || fail "a tampered round was submitted"

# --slurm needs --parallel, and excludes --devices.
(cd "$repo" && "$kloop" run --proposer true --slurm "$work/s3") > "$work/out5.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "--slurm without --parallel: exit $rc, wanted 2"
grep -q -- "--parallel" "$work/out5.txt" || fail "the refusal does not name --parallel: $(cat "$work/out5.txt")"
(cd "$repo" && "$kloop" run --proposer true --parallel 2 --slurm "$work/s3" --devices 2) > "$work/out6.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "--slurm with --devices: exit $rc, wanted 2"
echo "ok: kloop run --parallel 2 --slurm (two rounds as job arrays on 2 fake GPUs, resume after kill -9, a foreign task refused, a planted record caught)"
