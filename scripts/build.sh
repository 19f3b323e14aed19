#!/usr/bin/env bash
# Configures and builds kloop into ./build (Release-with-debug-info, tests included).
# CUDA architectures are fixed to sm_90 so no GPU is needed to configure.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build -j"$(nproc)"
