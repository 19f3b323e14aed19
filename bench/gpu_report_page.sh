#!/usr/bin/env bash
# A short CUDA loop on the GPU machine, then its page: `kloop init` of examples/rmsnorm-cuda v0
# (with its Nsight Compute profile), one `kloop iterate` to v4, `kloop report --html`, and the
# page copied to OUT_DIR with the workspace's text records. For checking report.html's roofline
# and diagnosis with real captures (docs/report.md). Usage: gpu_report_page.sh KLOOP OUT_DIR
set -euo pipefail
kloop=$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")
out=$2
src=$(cd "$(dirname "$0")/.." && pwd -P)
repo=$(mktemp -d /tmp/kloop-page.XXXXXX)
mkdir -p "$out" "$repo/op"
cp "$src"/examples/rmsnorm-cuda/{op.toml,reference.cu} "$repo/op/"
cp "$src/examples/rmsnorm-cuda/versions/v0_naive.cu" "$repo/kernel.cu"
git() { command git -C "$repo" -c user.email=k@localhost -c user.name=k "$@"; }
git init -q && git add -A && git commit -qm start
timing=(--max-time 1 --held-out 0)
(cd "$repo" && "$kloop" init op --candidate kernel.cu --max-iterations 3 --workspace ws "${timing[@]}") >"$out/init.txt" 2>&1
cp "$src/examples/rmsnorm-cuda/versions/v4_hybrid.cu" "$repo/kernel.cu"
printf 'Direction: one row per warp, vectorised loads\nExpected: faster on every shape\n\n## Strategy tags\n- vectorised loads\n' >"$repo/proposal.md"
(cd "$repo" && "$kloop" iterate --workspace ws --candidate kernel.cu --proposal proposal.md "${timing[@]}") >"$out/iterate.txt" 2>&1 || true
(cd "$repo" && "$kloop" report --workspace ws --html --quiet "${timing[@]}") >"$out/report.txt" 2>&1 || true
cp "$repo/ws/report.html" "$out/" 2>/dev/null || true
(cd "$repo/ws" && find . -name '*.md' -o -name 'profile_summary.json' | tar -cf "$out/ws_text.tar" -T -)
echo "page: $(ls -l "$out/report.html" 2>/dev/null)"
