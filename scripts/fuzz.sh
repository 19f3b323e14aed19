#!/usr/bin/env bash
# Builds kloop's libFuzzer targets (fuzz/: the op.toml loader and the --gate-k filter) with clang
# and runs each for SECONDS (default 60) from its committed corpus (fuzz/corpus/<target>); new
# inputs go to a scratch directory, never into the repository. A crash, a sanitizer report, a
# timeout or an exception kloop does not mean is a failure: the input is kept under
# build-fuzz/findings/ and the script exits 1. README.md, "Build and test by hand".
#
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: no clang++ (scripts/install-deps.sh installs clang-14)" >&2
  exit 2
fi
cmake -S fuzz -B build-fuzz -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j"$(nproc)" > /dev/null
mkdir -p build-fuzz/findings
status=0
for t in spec_loader gate_k; do
  scratch=$(mktemp -d)
  if ! (cd build-fuzz/findings && "../${t}_fuzz" -max_total_time="$seconds" -timeout=10 \
          -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 "$scratch" "../../fuzz/corpus/$t" > "../$t.log" 2>&1); then
    echo "fuzz.sh: ${t}_fuzz found a failing input (build-fuzz/findings/, log build-fuzz/$t.log):" >&2
    grep -E "ERROR|runtime error|SUMMARY|Test unit" "build-fuzz/$t.log" | head -5 >&2
    status=1
  else
    echo "fuzz.sh: ${t}_fuzz: $(grep -E '^stat::number_of_executed_units' "build-fuzz/$t.log" | awk '{print $2}') inputs in ${seconds} s, nothing found"
  fi
  rm -rf "$scratch"
done
exit $status
