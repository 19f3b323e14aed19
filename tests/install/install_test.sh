#!/usr/bin/env bash
# kloop's install, end to end (docs/install.md); registered by tests/install/CMakeLists.txt.
#
#   1. configure a fresh build of the tools only (no tests, no benchmarks) in $KLOOP_INSTALL_TEST_BUILD,
#      with the compiler launcher of the build that runs this test (a warm ccache makes it quick),
#      build it, `cmake --install --strip` it into a temporary prefix, and delete the build tree;
#   2. move the installed tree elsewhere (kloop finds its files relative to itself);
#   3. check the layout: the tools, the ABI header, the data, the docs, completions, the man page,
#      the CMake package;
#   4. from a directory outside the checkout, with HOME and KLOOP_HOME in the temporary directory
#      and no location override set, run the installed `kloop verify` on the installed
#      examples/rmsnorm with a correct candidate (must pass) and a broken one (must be rejected);
#      `kloop demo` must copy the installed example; with a Python that imports numpy, a Python
#      candidate must pass through the installed worker;
#   5. configure, build and run a consumer project against the prefix with find_package(kloop);
#   6. the installed binaries — stripped: no debug sections, checked — hold neither the source
#      checkout's path nor the deleted build tree's (debug information, which --strip removes,
#      may legitimately name sources; the program's own data must not).
#
# Environment (set by ctest): KLOOP_SOURCE_TREE, KLOOP_INSTALL_TEST_BUILD (the scratch build
# directory: beside the calling build, so a compiler cache configured with base_dir sees the same
# relative paths), CMAKE_COMMAND, KLOOP_GENERATOR, KLOOP_CXX_COMPILER, KLOOP_CXX_LAUNCHER,
# KLOOP_CUDA_LAUNCHER, KLOOP_CUDA_ARCHITECTURES, KLOOP_ENABLE_CUDA, KLOOP_BUILD_TYPE,
# KLOOP_TEST_PYTHON (may be empty).
set -euo pipefail

src=${KLOOP_SOURCE_TREE:?}
build=${KLOOP_INSTALL_TEST_BUILD:?}
cmake=${CMAKE_COMMAND:-cmake}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kloop-install-test.XXXXXX")
cleanup() { rm -rf "$tmp" "$build"; }
trap cleanup EXIT

fail() {
  echo "install test: FAILED: $*" >&2
  exit 1
}
step() { echo "== $* ($(date +%T))"; }

# 1. A fresh build of the tools, installed, its tree deleted.
rm -rf "$build"
configure=("$cmake" -S "$src" -B "$build" -G "${KLOOP_GENERATOR:-Ninja}"
  -DKLOOP_BUILD_TESTS=OFF -DKLOOP_BUILD_BENCH=OFF
  -DCMAKE_BUILD_TYPE="${KLOOP_BUILD_TYPE:-RelWithDebInfo}")
[[ -n "${KLOOP_CXX_COMPILER:-}" ]] && configure+=(-DCMAKE_CXX_COMPILER="$KLOOP_CXX_COMPILER")
[[ -n "${KLOOP_CXX_LAUNCHER:-}" ]] && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$KLOOP_CXX_LAUNCHER")
[[ -n "${KLOOP_CUDA_LAUNCHER:-}" ]] && configure+=(-DCMAKE_CUDA_COMPILER_LAUNCHER="$KLOOP_CUDA_LAUNCHER")
[[ -n "${KLOOP_CUDA_ARCHITECTURES:-}" ]] && configure+=(-DCMAKE_CUDA_ARCHITECTURES="$KLOOP_CUDA_ARCHITECTURES")
[[ -n "${KLOOP_ENABLE_CUDA:-}" ]] && configure+=(-DKLOOP_ENABLE_CUDA="$KLOOP_ENABLE_CUDA")
# With ccache, the same cache settings as scripts/build.sh's, so the objects of the calling build
# are reused whatever this build directory's path.
if [[ "${KLOOP_CXX_LAUNCHER:-}" == *ccache* ]]; then
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
step "configure ${configure[*]}"
"${configure[@]}" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure"; }
step "build"
"$cmake" --build "$build" -j "$(nproc)" >"$tmp/build.log" 2>&1 || { tail -50 "$tmp/build.log"; fail "build"; }
staged="$tmp/staged"
step "install --strip into $staged"
"$cmake" --install "$build" --prefix "$staged" --strip >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "install"; }
with_cuda=no
[[ -x "$build/src/kloop-runner-cuda" ]] && with_cuda=yes
rm -rf "$build"
[[ ! -e "$build" ]] || fail "the build tree '$build' is still there"

# 2. Moved: nothing may depend on where it was installed.
prefix="$tmp/moved/kloop"
mkdir -p "$tmp/moved"
mv "$staged" "$prefix"
prefix=$(cd "$prefix" && pwd -P)  # kloop resolves links in the paths it finds

# 3. The layout.
step "layout"
for f in bin/kloop libexec/kloop/kloop-runner include/kloop/kernel.h \
  share/kloop/python/kloop_worker/__init__.py share/kloop/calibrate/op.toml \
  share/kloop/examples/rmsnorm/op.toml share/kloop/examples/rmsnorm/versions/v1_rowwise.cpp \
  share/doc/kloop/README.md share/doc/kloop/DESIGN.md share/doc/kloop/docs/install.md share/doc/kloop/docs/cli.md \
  share/bash-completion/completions/kloop share/zsh/site-functions/_kloop share/man/man1/kloop.1 \
  lib/cmake/kloop/kloopConfig.cmake lib/cmake/kloop/kloopConfigVersion.cmake lib/cmake/kloop/kloopTargets.cmake; do
  [[ -f "$prefix/$f" ]] || fail "'$f' is not installed"
done
[[ -x "$prefix/bin/kloop" && -x "$prefix/libexec/kloop/kloop-runner" ]] || fail "the tools are not executable"
if [[ $with_cuda == yes ]]; then
  [[ -x "$prefix/libexec/kloop/kloop-runner-cuda" ]] || fail "kloop-runner-cuda was built but not installed"
fi
[[ "$(ls "$prefix/bin")" == "kloop" ]] || fail "bin/ holds more than kloop: $(ls "$prefix/bin")"
if find "$prefix" -name __pycache__ -o -name '*.pyc' | grep -q .; then fail "Python bytecode was installed"; fi
bash -n "$prefix/share/bash-completion/completions/kloop" || fail "the installed bash completion is not valid bash"
offered=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(kloop ver); COMP_CWORD=1; _kloop; echo "${COMPREPLY[*]}"' \
  bash "$prefix/share/bash-completion/completions/kloop")
[[ "$offered" == "verify" ]] || fail "the installed bash completion offers '$offered' for 'kloop ver'"
grep -q '^\.TH KLOOP 1' "$prefix/share/man/man1/kloop.1" || fail "the man page has no .TH line"
grep -q '^#compdef kloop$' "$prefix/share/zsh/site-functions/_kloop" || fail "zsh completion"

# 4. The installed kloop, from outside the checkout, with nothing pointing it at its files.
step "kloop verify from the install"
work="$tmp/work"
mkdir -p "$work" "$tmp/home"
unset KLOOP_DATA_DIR KLOOP_INCLUDE_DIR KLOOP_RUNNER KLOOP_PYTHON_DIR KLOOP_MEMORY_DB
export HOME="$tmp/home" KLOOP_HOME="$tmp/home/kloop" XDG_DATA_HOME="" XDG_CACHE_HOME=""
kloop="$prefix/bin/kloop"
example="$prefix/share/kloop/examples/rmsnorm"
quick=(--min-samples 3 --min-time 0.01 --max-time 0.2)
cd "$work"
"$kloop" --version
set +e
"$kloop" verify "$example" --candidate "$example/versions/v1_rowwise.cpp" "${quick[@]}" --json-out "$work/v1.json" \
  >"$work/v1.txt" 2>&1
rc=$?
set -e
[[ $rc -eq 0 ]] || { cat "$work/v1.txt"; fail "kloop verify of a correct candidate exited with $rc"; }
grep -q '"status": *"passed"' "$work/v1.json" || { cat "$work/v1.json"; fail "the record does not say passed"; }
set +e
"$kloop" verify "$example" --candidate "$example/broken/wrong_result.cpp" --no-bench >"$work/broken.txt" 2>&1
rc=$?
set -e
[[ $rc -eq 3 ]] || { cat "$work/broken.txt"; fail "a wrong result exited with $rc, not 3 (gate red)"; }

# kloop demo finds the installed example and copies it into its scratch repository. A compile
# timeout no compiler can meet stops it at its first build (exit 4, build failed): the loop itself
# is the integration tests' subject, this is about where the example comes from.
step "kloop demo finds the installed example"
set +e
"$kloop" demo --workspace "$work/demo" --compile-timeout 0.001 >"$work/demo.txt" 2>&1
rc=$?
set -e
[[ $rc -eq 4 ]] || { cat "$work/demo.txt"; fail "kloop demo with an impossible compile timeout exited with $rc, not 4"; }
cmp -s "$work/demo/repo/rmsnorm/kernel.cpp" "$example/versions/v0_naive.cpp" ||
  { cat "$work/demo.txt"; fail "kloop demo did not copy the installed examples/rmsnorm"; }
cmp -s "$work/demo/repo/rmsnorm/op.toml" "$example/op.toml" || fail "kloop demo's op.toml is not the installed one"

if [[ -n "${KLOOP_TEST_PYTHON:-}" && -d "$src/tests/fixtures/python_numpy" ]]; then
  step "a Python candidate through the installed worker ($KLOOP_TEST_PYTHON)"
  py_op="$src/tests/fixtures/python_numpy"
  py_candidate=$(find "$py_op/versions" -name '*.py' | sort | head -1)
  set +e
  KLOOP_PYTHON="$KLOOP_TEST_PYTHON" "$kloop" verify "$py_op" --candidate "$py_candidate" --no-bench --json-out "$work/py.json" \
    >"$work/py.txt" 2>&1
  rc=$?
  set -e
  [[ $rc -eq 0 ]] || { cat "$work/py.txt"; fail "kloop verify of Python candidate '$py_candidate' exited with $rc"; }
  # The build's manifest (in KLOOP_HOME's cache) names the worker directory it was built for.
  grep -r -q -F "$prefix/share/kloop/python" "$KLOOP_HOME" || fail "no manifest names the installed worker"
else
  echo "note: no Python with numpy: the installed worker is not exercised"
fi

# 5. find_package(kloop).
step "find_package(kloop) from a consumer project"
consumer_build="$tmp/consumer-build"
"$cmake" -S "$src/tests/install/consumer" -B "$consumer_build" -G "${KLOOP_GENERATOR:-Ninja}" \
  -DCMAKE_PREFIX_PATH="$prefix" ${KLOOP_CXX_COMPILER:+-DCMAKE_CXX_COMPILER="$KLOOP_CXX_COMPILER"} \
  >"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "the consumer did not configure"; }
"$cmake" --build "$consumer_build" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "the consumer did not build"; }
[[ "$("$consumer_build/consumer")" == "kloop ABI "* ]] || fail "the consumer did not run"
[[ "$(cat "$consumer_build/kloop_executable.txt")" == "$prefix/bin/kloop" ]] ||
  fail "kloop_EXECUTABLE is '$(cat "$consumer_build/kloop_executable.txt")', not '$prefix/bin/kloop'"

# 6. No path of the building machine in the installed programs.
step "no checkout path in the installed binaries"
binaries=("$prefix/bin/kloop" "$prefix"/libexec/kloop/*)
for b in "${binaries[@]}"; do
  if command -v readelf >/dev/null; then
    if readelf -S -W "$b" | grep -q -E '\.debug_|\.symtab'; then fail "'$b' is not stripped"; fi
  fi
  for p in "$src" "$build"; do
    if grep -a -q -F "$p" "$b"; then
      fail "'$b' holds the path '$p': $(grep -a -o -F "$p[^[:cntrl:]]*" "$b" | head -3 | tr '\n' ' ')"
    fi
  done
done

echo "install test: passed (prefix moved to $prefix; CUDA runner: $with_cuda)"
