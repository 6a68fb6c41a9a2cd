#!/bin/sh
# conv_refs_gpu - on the GPU host (python3 with torch and cupy), from the repository root:
# the stand-alone reference time at the default size and the GPU oracle (tiny, small,
# default) of exactly the convolution tasks whose reference is im2col/col2im + cuBLAS
# SGEMM (the .cu files that carry tools/tasks/conv_gemm.py's kernels).
#
#   sh bench/tasks/conv_refs_gpu.sh [OUTDIR]        (default $OUT, else /tmp/conv-refs)
#
# Writes OUTDIR/timing.md (tools/oracle/timing.py --ref --trials 20: torch eager, fp32,
# TF32 off, against the reference plan run as kevald's worker runs it), OUTDIR/oracle.md
# (tools/oracle/oracle.py --standalone at tiny, small and default, one table) and
# OUTDIR/log.txt (both tools' output, rows as they come). Timing runs first: it is the
# short stage (~1-2 min on an H100); the oracle at the default sizes takes a few minutes.
# Then, on the development machine:
#   python3 tools/tasks/gen_table.py --timing-ref OUTDIR/timing.md --oracle OUTDIR/oracle.md
set -u
out=${1:-${OUT:-/tmp/conv-refs}}
mkdir -p "$out"
log="$out/log.txt"
names=$(grep -l -E 'conv_(im2col|col2im)\(' tasks/level1/conv/*.cu tasks/level2/conv_epilogue/*.cu |
        sed 's|.*/||; s|\.cu$||')
only=$(echo $names | tr ' ' ',')
echo "tasks ($(echo $names | wc -w)): $(echo $names)" >"$log"
python3 tools/oracle/timing.py --ref --trials 20 --category conv,conv_epilogue --only "$only" \
        --md "$out/timing.md" >>"$log" 2>&1
echo "timing: exit $?" >>"$log"
# oracle.py --only takes one substring: these six selections are exactly the tasks above
# (l1_50-l1_81 but the depthwise l1_82-l1_87, and the six level-2 convolutions).
: >"$out/oracle.md"
for sel in "conv l1_5" "conv l1_6" "conv l1_7" "conv l1_80" "conv l1_81" "conv_epilogue l2_"; do
        set -- $sel
        python3 tools/oracle/oracle.py --standalone --shapes tiny,small,default --category "$1" \
                --only "$2" --md "$out/oracle.part.md" >>"$log" 2>&1
        echo "oracle --category $1 --only $2: exit $?" >>"$log"
        if [ ! -f "$out/oracle.part.md" ]; then
                :
        elif [ -s "$out/oracle.md" ]; then
                tail -n +3 "$out/oracle.part.md" >>"$out/oracle.md"
        else
                cat "$out/oracle.part.md" >>"$out/oracle.md"
        fi
        rm -f "$out/oracle.part.md"
done
grep -c 'yes' "$out/oracle.md" | sed 's/^/oracle rows within tolerance: /' >>"$log"
grep -c 'NO\|ERROR' "$out/oracle.md" | sed 's/^/oracle rows outside tolerance or failed: /' >>"$log"
