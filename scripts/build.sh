#!/usr/bin/env bash
# Configures and builds kloop into ./build (Release-with-debug-info, tests included).
# CUDA architectures are fixed to sm_90 so no GPU is needed to configure.
set -euo pipefail
cd "$(dirname "$0")/.."
# A compiler cache where there is one: a rebuild, and the install test's fresh build of the tools
# (tests/install), reuse the objects; base_dir and nohashdir make the build directory's own path
# irrelevant to the cache.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=90 "${launcher[@]}" >/dev/null
cmake --build build -j"$(nproc)"
