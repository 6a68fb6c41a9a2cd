#!/bin/bash
# One-shot GPU-host run of the throughput benchmarks (issue "Throughput: keep
# every GPU busy with useful work, and prove it"), in at most ~7.5 minutes:
#   1. the corpus (make_corpus.py, 320 kernels over 25 level-1 tasks, RL-like
#      failure mix) at small shapes (inline tasks without the KernelBench
#      default shape set), plus single-submission latency (30 distinct, 30 same)
#   2. the first 25 corpus kernels (one per task) at the library tasks' own
#      shapes (KernelBench default sizes included), cut off at 60 s
#   3. the load_inline side-by-side (N distinct ReLU sources)
# Usage (from the repository root, LD_LIBRARY_PATH already set):
#   bash bench/throughput/device.sh
# Environment: KEVALD_BUILD (default ./build), OUT (default /tmp/out),
#   GPUS (default auto), N_LOADINLINE (default 3), CORPUS_COUNT (default 320),
#   MODE (full, or compile for a dry run without a GPU: GPUS=none MODE=compile).
# Outputs under $OUT: corpus.json, throughput_small.{json,md,log},
#   throughput_library.{json,md,log}, load_inline.{json,log}, summary.md.
set -u
cd "$(dirname "$0")/../.."
KEVALD_BUILD=${KEVALD_BUILD:-build}
OUT=${OUT:-/tmp/out}
GPUS=${GPUS:-auto}
N_LOADINLINE=${N_LOADINLINE:-3}
CORPUS_COUNT=${CORPUS_COUNT:-320}
MODE=${MODE:-full}   # compile: a dry run on a host without a GPU (steps 1-2 compile-only, no step 3)
KEVALD=$KEVALD_BUILD/server/kevald
mkdir -p "$OUT"
T0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - T0 )) s] $*" >&2; }

if [ ! -x "$KEVALD" ]; then
        echo "device.sh: $KEVALD is missing (set KEVALD_BUILD)" >&2
        exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv > "$OUT/gpus.csv" 2>&1
nproc > "$OUT/nproc.txt"

stamp "corpus"
python3 bench/throughput/make_corpus.py --count "$CORPUS_COUNT" -o "$OUT/corpus.json"

stamp "1. corpus at small shapes + latency"
timeout -k 10 200 python3 bench/throughput/run.py --kevald "$KEVALD" --gpus "$GPUS" \
        --mode "$MODE" --corpus "$OUT/corpus.json" --shapes small --batch 128 --latency 30 --deadline 150 \
        --label "device.sh small shapes" \
        --json "$OUT/throughput_small.json" --md "$OUT/throughput_small.md" 2>&1 | tee "$OUT/throughput_small.log"

stamp "2. 25 kernels at the library tasks' own shapes (cut off at 60 s)"
timeout -k 10 100 python3 bench/throughput/run.py --kevald "$KEVALD" --gpus "$GPUS" \
        --mode "$MODE" --corpus "$OUT/corpus.json" --shapes library --limit 25 --batch 25 --latency 0 --deadline 60 \
        --label "device.sh library shapes" \
        --json "$OUT/throughput_library.json" --md "$OUT/throughput_library.md" 2>&1 | tee "$OUT/throughput_library.log"

if [ "$MODE" = full ]; then
        stamp "3. load_inline side by side (N=$N_LOADINLINE)"
        timeout -k 10 170 python3 bench/pytorch/load_inline.py --kevald "$KEVALD" --gpus "$GPUS" \
                --n "$N_LOADINLINE" --deadline 50 --json "$OUT/load_inline.json" 2>&1 | tee "$OUT/load_inline.log"
fi

stamp "summary"
{
        echo "## corpus at small shapes"
        cat "$OUT/throughput_small.md" 2>/dev/null || echo "(no result: see throughput_small.log)"
        echo
        echo "## corpus at the library tasks' own shapes (first 25 kernels, 60 s cut-off)"
        cat "$OUT/throughput_library.md" 2>/dev/null || echo "(no result: see throughput_library.log)"
        echo
        echo "## load_inline side by side"
        sed -n '/^| method/,$p' "$OUT/load_inline.log" 2>/dev/null
} > "$OUT/summary.md"
cat "$OUT/summary.md"
stamp "done"
