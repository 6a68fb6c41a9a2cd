#!/bin/bash
# Evaluations per minute vs GPU count: the same corpus against a fresh server
# with --gpus 0, then 0,1, then 0,1,2,3 (only the lists the host has GPUs
# for). Target: >= 0.9x linear.
# Usage (from the repository root, LD_LIBRARY_PATH already set):
#   bash bench/throughput/scaling.sh            # OUT=/tmp/out, KEVALD_BUILD=build
# Environment: KEVALD_BUILD, OUT, CORPUS_COUNT (default 2000: enough work that
#   4 GPUs are busy for ~50 s at the target rate), SHAPES (small|library, default small),
#   DEADLINE (seconds per run, default 240), TIMING (run.py --timing; empty: the corpus's fast),
#   RESULTS (non-empty: every job's result to scaling_<N>gpu.results.jsonl, for results_summary.py),
#   WORKERS (kevald serve --gpu-workers-per-gpu; empty: the server's default),
#   LISTS (the --gpus lists to run, default "0 0,1 0,1,2,3"),
#   SERVE_ARGS (more `kevald serve` flags, space-separated, e.g. "--fence=false"),
#   TAG (a suffix for the output files, to keep two configurations' runs apart).
set -u
cd "$(dirname "$0")/../.."
KEVALD_BUILD=${KEVALD_BUILD:-build}
OUT=${OUT:-/tmp/out}
CORPUS_COUNT=${CORPUS_COUNT:-2000}
SHAPES=${SHAPES:-small}
DEADLINE=${DEADLINE:-240}
TIMING=${TIMING:-}   # empty: the corpus's own (fast); default: the server's default budget; or fast/precise/JSON
KEVALD=$KEVALD_BUILD/server/kevald
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${NGPU:-0}" -lt 1 ]; then
        echo "scaling.sh: no GPU visible (nvidia-smi -L)" >&2
        exit 2
fi
python3 bench/throughput/make_corpus.py --count "$CORPUS_COUNT" -o "$OUT/corpus_scaling.json"
for LIST in ${LISTS:-0 0,1 0,1,2,3}; do
        N=$(( $(echo "$LIST" | tr -cd , | wc -c) + 1 ))
        [ "$N" -le "$NGPU" ] || continue
        echo "== $N GPU(s): --gpus $LIST" >&2
        timeout -k 10 $(( DEADLINE + 60 )) python3 bench/throughput/run.py --kevald "$KEVALD" --gpus "$LIST" \
                --corpus "$OUT/corpus_scaling.json" --shapes "$SHAPES" --batch 256 --latency 0 \
                ${TIMING:+--timing "$TIMING"} ${RESULTS:+--results "$OUT/scaling${TAG:-}_${N}gpu.results.jsonl"} \
                ${WORKERS:+--serve-arg=--gpu-workers-per-gpu --serve-arg="$WORKERS"} \
                $(for a in ${SERVE_ARGS:-}; do printf -- '--serve-arg=%s ' "$a"; done) \
                --deadline "$DEADLINE" --label "scaling $N GPU" \
                --serve-arg=--log-level=info --keep-log "$OUT/scaling${TAG:-}_${N}gpu.server.log" \
                --json "$OUT/scaling${TAG:-}_${N}gpu.json" --md "$OUT/scaling${TAG:-}_${N}gpu.md" 2>&1 | tee "$OUT/scaling${TAG:-}_${N}gpu.log"
done
python3 - "$OUT" "${TAG:-}" <<'PY' | tee "$OUT/scaling${TAG:-}.md"
import json, os, re, sys
out, tag = sys.argv[1], sys.argv[2]


def startups(n):
    """The GPU workers' start-up phases (HELLO's log line), from the server log."""
    p = os.path.join(out, "scaling%s_%dgpu.server.log" % (tag, n))
    ms = []
    if os.path.exists(p):
        for line in open(p, errors="replace"):
            m = re.search(r"start-up ms: sandbox (\d+), cuda_init (\d+), helpers (\d+), cublas (\d+)", line)
            if m:
                ms.append((int(m.group(2)), sum(int(x) for x in m.groups())))
    return ms


def pcts(v):
    v = sorted(v)
    return "%d / %d / %d" % (v[len(v) // 2], v[min(len(v) - 1, len(v) * 9 // 10)], v[-1]) if v else "-"


rows = []
for n in (1, 2, 4):
    p = os.path.join(out, "scaling%s_%dgpu.json" % (tag, n))
    if os.path.exists(p):
        rows.append((n, json.load(open(p))))
if not rows:
    print("no scaling results")
    sys.exit(1)
base = rows[0][1]["corpus"]["evals_per_min"] if rows[0][0] == 1 else None
base_s = rows[0][1]["corpus"].get("evals_per_min_steady") if rows[0][0] == 1 else None
print("| GPUs | evaluations/min | per GPU | vs linear | steady-state evals/min | vs linear | GPU busy (active) | plan time | worker occupied | restarts | worker start-ups: cuda_init ms p50 / p90 / max | whole start-up ms p50 / p90 / max | finished | wall s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n, r in rows:
    c = r["corpus"]
    eff = ("%.2f×" % (c["evals_per_min"] / (base * n))) if base else "-"
    st = c.get("evals_per_min_steady")
    eff_s = ("%.2f×" % (st / (base_s * n))) if base_s and st else "-"
    su = startups(n)
    print("| %d | %.0f | %.0f | %s | %s | %s | %s%% | %s%% | %s%% | %s | %s (%d) | %s | %d/%d | %.1f |" % (
        n, c["evals_per_min"], c["evals_per_min"] / n, eff, st, eff_s, r.get("gpu_active_pct"), r.get("gpu_busy_pct"),
        r.get("gpu_occupied_pct"), r.get("gpu_worker_restarts"), pcts([a for a, _ in su]), len(su),
        pcts([b for _, b in su]), c["finished"], c["submissions"], c["wall_s"]))
PY
