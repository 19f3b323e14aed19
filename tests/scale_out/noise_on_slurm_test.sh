#!/usr/bin/env bash
# `kloop noise --slurm` end to end on a single-node Slurm with two fake GPUs (single_node.sh), on
# the CPU example examples/rmsnorm: the runs become tasks of one job array, one fake GPU each;
# the record names each run's device and the job; a kloop killed after submitting resumes the
# same job instead of submitting again; a state directory of another run is refused.
# Usage: noise_on_slurm_test.sh KLOOP SOURCE_DIR    (exit 77: no usable Slurm here, skipped)
set -uo pipefail
kloop=$1
src=$2
source "$src/tests/scale_out/slurm_test_setup.sh" noise-slurm

noise=("$kloop" noise "$src/examples/rmsnorm" --candidate "$src/examples/rmsnorm/versions/v1_rowwise.cpp"
       --mode fwd --shape n1000_d777 --min-samples 5 --min-time 0.01 --max-time 0.2 --slurm-gres gpu:1)

# Four runs on two fake GPUs.
"${noise[@]}" --runs 4 --slurm "$work/s1" --json > "$work/out1.json" 2> "$work/err1.txt" ||
  fail "kloop noise --slurm exited $? ($(tail -3 "$work/err1.txt"))"
python3 - "$work/out1.json" <<'PY' || fail "the record of the four runs"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["engine"] == "slurm", r["engine"]
assert r["runs"] == 4 and len(r["run_devices"]) == 4, r["run_devices"]
devices = {d.split(" on ")[0] for d in r["run_devices"]}
assert devices <= {"0", "1"} and len(devices) == 2, r["run_devices"]  # each task on one fake GPU, both used
assert len(r["slurm_jobs"]) == 1, r["slurm_jobs"]
assert all(s["runs"] == 4 for s in r["shapes"]), [s["runs"] for s in r["shapes"]]
PY

# Killed after submitting: the job goes on; the same command resumes it, submitting nothing.
"${noise[@]}" --runs 2 --slurm "$work/s2" > "$work/out2.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q '"jobs": \[' "$work/s2/slurm_state.json" 2>/dev/null && grep -q '"[0-9]' "$work/s2/slurm_state.json" && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
job=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'][0])" "$work/s2/slurm_state.json") ||
  fail "no job id in slurm_state.json after the submission"
"${noise[@]}" --runs 2 --slurm "$work/s2" > "$work/out3.txt" 2>&1 || fail "the resumed noise exited $? ($(tail -3 "$work/out3.txt"))"
grep -q "resumed Slurm job $job" "$work/out3.txt" || fail "no resume of job $job: $(cat "$work/out3.txt")"
jobs=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['jobs']))" "$work/s2/slurm_state.json")
[ "$jobs" = 1 ] || fail "the resume submitted again ($jobs jobs)"

# Another run's state directory is refused, naming the option.
"${noise[@]}" --runs 3 --slurm "$work/s1" > "$work/out4.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "a foreign state directory: exit $rc, wanted 2"
grep -q "another run's Slurm state" "$work/out4.txt" || fail "the refusal does not say why: $(cat "$work/out4.txt")"
echo "ok: kloop noise --slurm (4 runs on 2 fake GPUs, resume after kill -9, foreign state refused)"
