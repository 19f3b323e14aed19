#!/usr/bin/env bash
# Set up, build, and run every test (unit + integration; GPU tests skip without a GPU), then the
# fuzz targets for a minute each.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The parsers of user input under libFuzzer, from their committed corpus, for a fixed budget.
bash scripts/fuzz.sh 60
