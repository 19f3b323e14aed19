#!/usr/bin/env bash
# The demo: set up, build, then `kloop verify` every version of the bundled example (gate +
# bench), and show one broken candidate being rejected with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
example=examples/rmsnorm
for v in "$example"/versions/*.cpp; do
  echo "================================================================ $v"
  ./build/src/kloop verify "$example" --candidate "$v"
done
echo "================================================================ $example/broken/cached_output.cpp (must be rejected)"
set +e
./build/src/kloop verify "$example" --candidate "$example/broken/cached_output.cpp"
rc=$?
set -e
echo "exit code $rc (3 = gate red)"
[ "$rc" -eq 3 ]
