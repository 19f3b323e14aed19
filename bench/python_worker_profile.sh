#!/usr/bin/env bash
# Where the wall time of a Python iteration goes (docs/perf.md): `kloop compare` on
# examples/rmsnorm-triton (v1_fused against v0_straightforward, default stopping rule) with every
# Python process kloop starts — the build probes and the gate, bench and A/B workers — run under
# cProfile. Writes one .prof per process (named by role and phase), a text report of each
# (top functions by cumulative time) and a table of the processes' wall times in summary.txt.
#
#   bench/python_worker_profile.sh BIN_DIR OUT_DIR [kloop compare options...]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
k="$(cd "$1" && pwd)/src/kloop"
mkdir -p "$2"; out="$(cd "$2" && pwd)"; shift 2
py=${PYTHON:-$(command -v python3)}
ex=$here/examples/rmsnorm-triton

# Every worker and probe writes its own profile (kloop_worker/main.py, KLOOP_WORKER_PROFILE_DIR).
# Under the fork server (the default) a worker's imports were the server's and are not in it;
# FORK_SERVER=0 profiles fresh interpreters, imports included.
export KLOOP_WORKER_PROFILE_DIR=$out KLOOP_PYTHON_FORK_SERVER=${FORK_SERVER:-1}
t0=$(date +%s.%N)
"$k" compare "$ex" --candidate "$ex/versions/v1_fused.py" --base "$ex/versions/v0_straightforward.py" \
    --json-out "$out/compare.json" "$@" > "$out/compare.txt" 2>&1
rc=$?
t1=$(date +%s.%N)

"$py" - "$out" "$rc" "$t0" "$t1" <<'PY' | tee "$out/summary.txt"
import glob, io, os, pstats, sys
out, rc, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
print(f"kloop compare: exit {rc}, {t1 - t0:.1f} s of wall time")
print("| process | seconds under cProfile | top kloop_worker / torch / numpy calls (cumulative s) |")
print("|---|--:|---|")
total = 0.0
for f in sorted(glob.glob(os.path.join(out, "*.prof"))):
    st = pstats.Stats(f)
    secs = st.total_tt
    total += secs
    buf = io.StringIO()
    pstats.Stats(f, stream=buf).sort_stats("cumulative").print_stats(40)
    with open(f[:-5] + ".txt", "w") as t:
        t.write(buf.getvalue())
    rows = []
    for (file, line, fn), (cc, nc, tt, ct, callers) in st.stats.items():
        if "kloop_worker" in file and fn not in ("<module>", "main", "run_job", "run"):
            rows.append((ct, f"{os.path.basename(file)}:{fn}"))
    rows.sort(reverse=True)
    top = ", ".join(f"{name} {ct:.1f}" for ct, name in rows[:6])
    print(f"| {os.path.basename(f)[20:-5]} | {secs:.1f} | {top} |")
print(f"sum over the processes: {total:.1f} s (the rest of the wall time is kloop itself)")
PY
