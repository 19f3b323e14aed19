#!/usr/bin/env bash
# `kloop noise --devices all` spread over fake devices (KLOOP_DEVICES stands in for the GPU probe;
# the CPU example examples/rmsnorm): every run is recorded with the device it ran on, both
# devices take runs, and the noise summary still counts every run.
# Usage: noise_on_devices_test.sh KLOOP SOURCE_DIR
set -uo pipefail
kloop=$1
src=$2
work=$(mktemp -d /tmp/kloop-devices-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

KLOOP_DEVICES=fake-gpu-0,fake-gpu-1 "$kloop" noise "$src/examples/rmsnorm" \
  --candidate "$src/examples/rmsnorm/versions/v1_rowwise.cpp" --mode fwd --shape n1000_d777 \
  --min-samples 5 --min-time 0.01 --max-time 0.2 --runs 6 --devices all --json > "$work/out.json" 2> "$work/err.txt" ||
  fail "kloop noise --devices all exited $? ($(tail -3 "$work/err.txt"))"
python3 - "$work/out.json" <<'PY' || fail "the record of the six runs"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["engine"] == "local", r["engine"]
assert r["runs"] == 6 and len(r["run_devices"]) == 6, r["run_devices"]
assert r["run_devices"][0] == "fake-gpu-0", r["run_devices"]            # the gated first run: the first slot
assert set(r["run_devices"]) == {"fake-gpu-0", "fake-gpu-1"}, r["run_devices"]
assert all(s["runs"] == 6 for s in r["shapes"]), [s["runs"] for s in r["shapes"]]
PY
# A CPU op without named devices is timed one run at a time on the host: refused, naming the option.
"$kloop" noise "$src/examples/rmsnorm" --candidate "$src/examples/rmsnorm/versions/v1_rowwise.cpp" --devices 0,1 \
  > "$work/out2.txt" 2>&1
rc=$?
[ $rc = 2 ] || fail "--devices 0,1 on a CPU op: exit $rc, wanted 2"
grep -q "option --devices" "$work/out2.txt" || fail "the refusal does not name the option: $(cat "$work/out2.txt")"
echo "ok: kloop noise --devices all over two fake devices"
