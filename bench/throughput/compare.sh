#!/bin/bash
# Server configurations against each other on one host: scaling.sh once per
# configuration and repeat, the order reversed every repeat (A B C, C B A,
# ...), so drift on the host falls on all alike. Writes $OUT/compare.md (one
# row per run: evaluations/min and steady state at 1, 2 and 4 GPUs, their
# ratio to linear, worker occupancy and where the host's CPU went at the
# largest GPU count) and $OUT/raw.tgz (every run's summary, JSON and server log).
# Usage (repository root, LD_LIBRARY_PATH set):
#   CONFIGS="new: old:--gpu-prefetch=false,--compile-nice=0" bash bench/throughput/compare.sh
# CONFIGS: NAME:FLAGS entries, FLAGS comma-separated `kevald serve` flags (empty: the defaults).
# Environment: OUT, REPEATS (default 2), and scaling.sh's own (CORPUS_COUNT, LISTS, TIMING,
#   DEADLINE; defaults here: 1000, "0 0,1 0,1,2,3", default, 150).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
RAW=$OUT/raw
mkdir -p "$RAW"
export CORPUS_COUNT=${CORPUS_COUNT:-1000} LISTS=${LISTS:-"0 0,1 0,1,2,3"} TIMING=${TIMING:-default} DEADLINE=${DEADLINE:-150}
order=${CONFIGS:-"new: old:--gpu-prefetch=false,--compile-nice=0"}
for r in $(seq 1 "${REPEATS:-2}"); do
        for c in $order; do
                name=${c%%:*}
                flags=${c#*:}
                echo "== round $r: $name ${flags:-(defaults)} ($(date -u +%T))" >&2
                OUT=$RAW TAG="_${name}_${r}" SERVE_ARGS="${flags//,/ }" bash bench/throughput/scaling.sh >/dev/null 2>&1
        done
        order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
python3 - "$RAW" <<'PY' | tee "$OUT/compare.md"
import glob, json, os, re, sys
raw = sys.argv[1]
runs = {}
for p in glob.glob(os.path.join(raw, "scaling_*_*_*gpu.json")):
    m = re.match(r"scaling_(.+)_(\d+)_(\d)gpu\.json$", os.path.basename(p))
    if m:
        runs.setdefault((int(m.group(2)), m.group(1)), {})[int(m.group(3))] = json.load(open(p))
print("| round | config | 1 GPU evals/min (steady) | 2 GPUs (vs linear; steady) | 4 GPUs (vs linear; steady) | worker occupied 1 / 4 GPUs | CPU at the largest count: host busy; dispatch thread s; compile s; GPU workers s |")
print("|---|---|---|---|---|---|---|")
for (r, name) in sorted(runs):
    g = runs[(r, name)]
    one = g.get(1, {}).get("corpus")
    cells = []
    for n in (1, 2, 4):
        c = g.get(n, {}).get("corpus")
        if not c:
            cells.append("-")
            continue
        e, s = c["evals_per_min"], c.get("evals_per_min_steady")
        if n == 1 or not one:
            cells.append("%.0f (%s)" % (e, "%.0f" % s if s else "-"))
        else:
            s1 = one.get("evals_per_min_steady")
            cells.append("%.0f (%.2f×; %s)" % (e, e / (one["evals_per_min"] * n),
                                              "%.2f×" % (s / (s1 * n)) if s and s1 else "-"))
    occ = " / ".join("%s%%" % g[n].get("gpu_occupied_pct", "-") if n in g else "-" for n in (1, 4))
    top = g[max(g)].get("cpu") or {}
    cpu = "%s%% of %s; %s; %s; %s" % (top.get("host_busy_pct"), top.get("cores"),
                                     (top.get("server_threads_s") or {}).get("dispatch", "-"),
                                     (top.get("children_s") or {}).get("kevald-compile", "-"),
                                     (top.get("children_s") or {}).get("kevald-gpu", "-")) if top else "-"
    print("| %d | %s | %s | %s | %s |" % (r, name, " | ".join(cells), occ, cpu))
PY
tar -czf "$OUT/raw.tgz" -C "$RAW" . && rm -rf "$RAW"
