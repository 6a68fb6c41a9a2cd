#!/bin/bash
# The issue-7 figures of BENCHMARKS.md, as run on the GPU hosts in session 2.
# Usage (repository root, build/ and LD_LIBRARY_PATH ready, see README):
#   bash bench/throughput/measure.sh one     # one GPU: RL corpus at default and fast timing,
#                                            # correct kernels only, no-standby ablation,
#                                            # library shapes, single-submission latency (~3 min)
#   bash bench/throughput/measure.sh scaling # 1, 2, 4 GPUs (those the host has), RL corpus, default timing (~3 min)
#   bash bench/throughput/measure.sh clean   # 1 and all the host's GPUs, correct + incorrect kernels only
# Outputs under $OUT (default /tmp/out): one .json/.md/.log per run.
set -u
cd "$(dirname "$0")/../.."
B=${KEVALD_BUILD:-build}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
run() { name=$1; shift; timeout 120 python3 bench/throughput/run.py --kevald "$B/server/kevald" \
        --json "$OUT/$name.json" --md "$OUT/$name.md" "$@" > "$OUT/$name.log" 2>&1; }
case "${1:-one}" in
one)
        python3 bench/throughput/make_corpus.py --count 320 -o "$OUT/corpus.json"
        C="--gpus auto --corpus $OUT/corpus.json --batch 128"
        run default $C --shapes small --timing default --latency 30 --deadline 90
        run fast $C --shapes small --timing fast --latency 0 --deadline 70
        run default_correct $C --shapes small --timing default --only-expect correct --latency 0 --deadline 70
        run default_w1 $C --shapes small --timing default --latency 0 --deadline 90 \
                --serve-arg=--gpu-workers-per-gpu --serve-arg=1
        run library --gpus auto --corpus "$OUT/corpus.json" --shapes library --timing default --limit 25 --batch 25 \
                --latency 0 --deadline 60 ;;
scaling)
        OUT=$OUT KEVALD_BUILD=$B CORPUS_COUNT=1000 TIMING=default DEADLINE=150 bash bench/throughput/scaling.sh ;;
clean)
        python3 bench/throughput/make_corpus.py --count 1000 -o "$OUT/corpus.json"
        NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
        for L in 0 $(seq -s, 0 $(( ${NGPU:-1} - 1 ))); do
                [ "$L" = 0 ] || [ "${NGPU:-1}" -gt 1 ] || continue
                run "clean_$L" --gpus "$L" --corpus "$OUT/corpus.json" --shapes small --timing default \
                        --only-expect correct,incorrect --limit 400 --batch 256 --latency 0 --deadline 60
        done ;;
*) echo "usage: $0 one|scaling|clean" >&2; exit 2 ;;
esac
