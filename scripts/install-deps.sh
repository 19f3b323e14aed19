#!/usr/bin/env bash
# Installs kloop's build and test dependencies from Debian 12's packages. Run as root.
# Idempotent: re-running installs nothing new.
set -euo pipefail
packages=(
  build-essential cmake git pkg-config ccache
  libcli11-dev nlohmann-json3-dev libfmt-dev libtomlplusplus-dev
  libsqlite3-dev libssl-dev libgtest-dev libgmock-dev
  python3 python3-numpy python3-pytest python3-pip
  chromium zlib1g-dev
  clang-14 libclang-rt-14-dev
  munge slurmctld slurmd slurm-client
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# CuTe's and CUTLASS's headers, which examples/fla-chunk-simple-gla's CUDA versions include (its
# op.toml's [build] include_dirs names the package): from PyPI, pinned, without its Python
# dependencies (only the headers are used). Into the python3 on PATH, the interpreter kloop asks.
if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("cutlass_library") is None)' 2>/dev/null; then
  python3 -m pip install -q --root-user-action=ignore --break-system-packages --no-deps nvidia-cutlass==4.2.0.0
fi
