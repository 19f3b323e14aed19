#!/usr/bin/env bash
# FLA's own repository in black-box mode on a GPU machine (docs/fla.md): rms_norm
# (fla/modules/layernorm.py) through kloop's loop, against the loop an FLA maintainer runs by hand.
#
#   setup     unpack the FLA archive into a git repository ($FLA_REPO, default /tmp/fla-bb) and
#             register rms_norm in its benchmarks/ops/registry.py (the registry has no norm entry);
#             write the slow candidate: layernorm.py with layer_norm_fwd_kernel1 autotuned over
#             num_warps [1] instead of [2, 4, 8, 16]
#   new       kloop new --from-fla rms_norm (target fla/modules/layernorm.py), then the gate narrowed
#             to `-k test_rmsnorm` and the bench to $SHAPES
#   init      kloop init on the current layernorm.py (cold: Triton's caches empty)
#   noise     kloop noise: A against A, $NOISE_RUNS runs (false verdicts at the default 2 %)
#   sides     kloop's registry module alone, both sides in one process (base: the setup commit's
#             file, candidate: the slow one), as an A/B round runs it (a 5 s round budget, the
#             early verdict): whether FLA's import keeps the sides in one process, per shape its
#             samples, median, spread and how it stopped; three runs (the first compiles)
#   iterate   the slow candidate in the working tree, kloop iterate (warm); the file restored after;
#             the iteration's records (its JSON and summaries) copied to OUT_DIR/iterate_ws
#   fla_warm  FLA's loop on the unchanged file: Triton's own cache holds the base's kernels, as
#             kloop's holds them after init (both loops then compile only the candidate)
#   fla_style the same candidate, FLA's loop: pytest -k test_rmsnorm, then benchmarks/ops/run.py
#             --op rms_norm --base <the setup commit> (new and base, each in its own process; the
#             repository on PYTHONPATH, as an editable install puts it)
#
# Each step is time-boxed; its output is OUT_DIR/STEP.txt and its exit status and wall time a line
# of OUT_DIR/steps.txt. KLOOP is the kloop binary; FLA_TGZ a `git archive` of FLA (tar.gz). A
# binary copied out of its build tree needs the tree's share/kloop beside it (BIN_DIR/share/kloop,
# `cp -a build/share BIN_DIR/`: links to the checkout's python/, examples/ and share/calibrate) or
# KLOOP_DATA_DIR, else every step stops at once ("cannot find kloop's data directory").
#
#   bench/gpu_fla_blackbox.sh KLOOP FLA_TGZ OUT_DIR [STEPS]
#
# STEPS (default all but sides): setup new init noise fla_warm iterate fla_style
set -u
k=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); tgz=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); out=$3
steps=${4:-"setup new init noise fla_warm iterate fla_style"}
repo=${FLA_REPO:-/tmp/fla-bb}
shapes=${SHAPES:-'"fwd/B4_T4096_H64_D128", "fwdbwd/B4_T4096_H64_D128"'}
noise_runs=${NOISE_RUNS:-20}
slow=$repo.slow_layernorm.py; orig=$repo.layernorm.py; base_ref=$repo.base_ref
mkdir -p "$out"; out=$(cd "$out" && pwd)
git_c() { git -c user.name=kloop-bench -c user.email=bench@kloop.invalid "$@"; }
run() {  # NAME TIMEBOX CMD...
  local name=$1 box=$2; shift 2
  local t0; t0=$(date +%s.%N)
  (cd "$repo" && timeout "$box" "$@") > "$out/$name.txt" 2>&1; local rc=$?
  awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%s rc=%d wall=%.1f s\n", n, rc, b - a }' \
    | tee -a "$out/steps.txt"
}
restore() { cp "$orig" "$repo/fla/modules/layernorm.py"; }  # the loop may have committed its candidate

for step in $steps; do case $step in
  setup)
    rm -rf "$repo" && mkdir -p "$repo" && tar -xzf "$tgz" -C "$repo" || exit 1
    cat >> "$repo/benchmarks/ops/registry.py" <<'PY'


# rms_norm (fla.modules.layernorm): x is [B, T, H*D], the weight [H*D].
def shape_HD_flat(B, T, H, D, **kw):
    return (H * D,)


register_op(OpConfig(
    name='rms_norm',
    import_path='fla.modules.layernorm',
    inputs={'x': TensorSpec(shape_BTD), 'weight': TensorSpec(shape_HD_flat)},
    extra_kwargs={'bias': None},
    output_is_tuple=False,
    category='norm',
    test_file='tests/modules/test_layernorm.py',
))
PY
    (cd "$repo" && git init -q && git_c add -A && git_c commit -qm "FLA with rms_norm registered" &&
       git rev-parse HEAD) > "$base_ref" || exit 1
    cp "$repo/fla/modules/layernorm.py" "$orig"
    sed '/^def layer_norm_fwd_kernel1/,$!{s/for num_warps in \[2, 4, 8, 16\]/for num_warps in [1]/}' \
      "$repo/fla/modules/layernorm.py" > "$slow"
    cmp -s "$slow" "$repo/fla/modules/layernorm.py" && { echo "setup: the slow candidate is unchanged" | tee -a "$out/steps.txt"; exit 1; }
    echo "setup: $repo, slow candidate $slow" | tee -a "$out/steps.txt" ;;
  new)
    run new 60 "$k" new --from-fla rms_norm --python python3 --target fla/modules/layernorm.py
    op="$repo/kloop/rms_norm/op.toml"
    sed -i -e 's|"tests/modules/test_layernorm.py", "-q"\]|"tests/modules/test_layernorm.py", "-k", "test_rmsnorm", "-q"]|' "$op"
    SHAPES="$shapes" perl -0pi -e 's/^shapes = \[.*?\]/shapes = [$ENV{SHAPES}]/ms' "$op"
    grep -E '^command|^shapes' "$op" | tee -a "$out/steps.txt" ;;
  init)
    run init ${BOX:-560} "$k" init kloop/rms_norm --candidate fla/modules/layernorm.py --max-iterations 3 --no-profile ;;
  noise)
    run noise ${BOX:-560} "$k" noise kloop/rms_norm --candidate fla/modules/layernorm.py --runs "$noise_runs" \
        --json-out "$out/noise.json" ;;
  iterate)
    cp "$slow" "$repo/fla/modules/layernorm.py"
    printf 'Direction: layer_norm_fwd_kernel1 with one warp per row\nExpected: slower on every shape\nPrediction: speedup 0.5-0.95\n\n## Strategy tags\n- launch_config\n' \
      > "$repo/optimization_proposal.md"
    run iterate ${BOX:-560} "$k" iterate --proposal optimization_proposal.md --no-profile
    # The iteration's records (where its wall time went: gate, reuse, each A/B round) come back.
    mkdir -p "$out/iterate_ws" && for f in "$repo"/profile/*/iter_v*/*.json "$repo"/profile/*/iter_v*/*.md; do
      [ -f "$f" ] && cp "$f" "$out/iterate_ws/$(basename "$(dirname "$f")")_$(basename "$f")"; done
    restore; rm -f "$repo/optimization_proposal.md" ;;
  sides)
    py="$(cd "$(dirname "${BASH_SOURCE[0]}")/../python" && pwd)"
    rm -rf "$repo.side" && cp -r "$repo" "$repo.side" && cp "$slow" "$repo.side/fla/modules/layernorm.py"
    for n in 1 2 3; do
      (cd /tmp && PYTHONPATH="$py" KLOOP_BENCH_SIDES="[{\"name\": \"base\", \"root\": \"$repo\"}, {\"name\": \"candidate\", \"root\": \"$repo.side\"}]" \
         KLOOP_BENCH_SHAPES=$(echo "$shapes" | tr -d '" ') KLOOP_BENCH_ROUND_TIME_S=5 KLOOP_BENCH_MIN_SAMPLES=10 \
         KLOOP_BENCH_MIN_TIME_S=0.5 KLOOP_BENCH_MAX_TIME_S=15 KLOOP_BENCH_TARGET_RSD=0.005 \
         KLOOP_BENCH_EARLY_VERDICT='{"min_effect": 0.02, "confidence": 0.95, "first_look": 64, "max_looks": 12, "min_time_s": 0.1}' \
         run "sides$n" ${BOX:-300} python3 -m kloop_worker.fla_registry --op rms_norm)
      python3 - "$out/sides$n.txt" <<'PY' | tee -a "$out/steps.txt"
import json, statistics as st, sys
doc = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
if "sides" not in doc:
    print(doc); sys.exit()
print("environment imports:", doc.get("environment_imports"), "| holds timed out:", doc["device"].get("holds_timed_out"))
for side in ("base", "candidate"):
    for s in doc["sides"][side]["shapes"]:
        x = s["samples_ms"]
        print(side, s["mode"], s["name"], "n=%d median=%.4f ms cv=%.2f%%" % (len(x), st.median(x), 100 * st.pstdev(x) / st.mean(x)),
              "stop:", s.get("stop"), s.get("early_verdict") or "", "cap %.2f s" % s["time_cap_s"] if "time_cap_s" in s else "")
PY
    done ;;
  fla_warm|fla_style)  # FLA's runner times the working tree (new) against the setup commit (base)
    [ "$step" = fla_style ] && cp "$slow" "$repo/fla/modules/layernorm.py"
    PYTHONPATH="$repo" run "$step" ${BOX:-560} bash -c "python3 -m pytest tests/modules/test_layernorm.py -k test_rmsnorm -q -p no:cacheprovider &&
      python3 benchmarks/ops/run.py --op rms_norm --base $(cat "$base_ref")"
    restore ;;
esac; done
