# Sourced by the Slurm tests (tests/scale_out/*_on_slurm_test.sh) after `kloop` and `src` are set:
# a scratch directory $work removed at exit, fail(), a single-node Slurm with two fake GPUs
# started in $work/cluster (single_node.sh; exit 77, skipped, where it cannot run) and stopped at
# exit, and scratch_loop, which makes $repo (a git repository holding examples/rmsnorm with
# kernel.cpp = v0_naive.cpp) and runs `kloop init` there with the quick timing options $quick.
work=$(mktemp -d "/tmp/kloop-$1-test.XXXXXX")
cleanup() { bash "$src/tests/scale_out/single_node.sh" stop "$work/cluster" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(bash "$src/tests/scale_out/single_node.sh" start "$work/cluster")
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "single_node.sh start exited $rc"
eval "$out"

export KLOOP_MEMORY_DB=$work/memory.sqlite
quick=(--min-samples 5 --min-time 0.01 --max-time 0.2 --held-out 0)
repo=$work/repo

# scratch_loop [LOG]: the scratch repository (made once) and a new loop in it (cap 4).
scratch_loop() {
  local log=${1:-$work/init.txt}
  if [ ! -d "$repo" ]; then
    mkdir -p "$repo" && cp -r "$src/examples/rmsnorm" "$repo/rmsnorm" &&
      cp "$repo/rmsnorm/versions/v0_naive.cpp" "$repo/rmsnorm/kernel.cpp" || fail "the scratch repository"
    (cd "$repo" && git init -q && git config user.email t@localhost && git config user.name t && git add -A &&
       git commit -qm start) || fail "the scratch repository"
  else
    cp "$repo/rmsnorm/versions/v0_naive.cpp" "$repo/rmsnorm/kernel.cpp"
  fi
  (cd "$repo" && "$kloop" init rmsnorm --candidate rmsnorm/kernel.cpp --max-iterations 4 "${quick[@]}") > "$log" 2>&1 ||
    fail "kloop init exited $? ($(tail -3 "$log"))"
}

# kill_after_submission PID STATE OUT: waits (up to 120 s) until the Slurm state file STATE holds
# a job id, kills kloop's PID with SIGKILL, and prints that job id (fails naming OUT's tail when
# there is none).
kill_after_submission() {
  local pid=$1 state=$2 out=$3
  for _ in $(seq 1200); do
    grep -q '"[0-9]' "$state" 2>/dev/null && break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'][0])" "$state" 2>/dev/null ||
    fail "no job id in $state after the submission ($(tail -3 "$out"))"
}
