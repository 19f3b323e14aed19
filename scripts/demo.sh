#!/usr/bin/env bash
# The demo: set up, build, then run the whole optimisation loop on the bundled example with
# `kloop demo` — init (baseline v0), four iterations (a positive one, a broken one the gate
# rejects, a slower one, a last one), status, best, report — in a scratch git repository under a
# fresh temporary directory (your checkout is never modified). Extra arguments go to `kloop demo`
# (e.g. --workspace DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/src/kloop demo "$@"
