#!/bin/sh
# conv_refs_gpu - on the GPU host (python3 with torch and cupy), from the repository root:
# the stand-alone reference time at the default size and the GPU oracle (tiny, small,
# default) of exactly the convolution tasks whose reference is im2col/col2im + cuBLAS
# SGEMM or the tiled depthwise kernel (the .cu files that carry conv_im2col, conv_col2im
# or dwconv2d_ref: tools/tasks/conv_gemm.py, tools/tasks/l1_conv.py).
#
#   sh bench/tasks/conv_refs_gpu.sh [OUTDIR]        (default $OUT, else /tmp/conv-refs)
#
# Writes OUTDIR/timing.md (tools/oracle/timing.py --ref --trials 20: torch eager, fp32,
# TF32 off, against the reference plan run as kevald's worker runs it), OUTDIR/oracle.md
# (tools/oracle/oracle.py --standalone at tiny, small and default) and OUTDIR/log.txt
# (both tools' output, rows as they come). Both tools read a temporary task folder that
# links exactly those tasks. Timing runs first: it is the short stage.
# Then, on the development machine:
#   python3 tools/tasks/gen_table.py --timing-ref OUTDIR/timing.md --oracle OUTDIR/oracle.md
set -u
out=${1:-${OUT:-/tmp/conv-refs}}
mkdir -p "$out"
log="$out/log.txt"
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
n=0
for cu in $(grep -l -E '(conv_im2col|conv_col2im|dwconv2d_ref)\(' tasks/level1/conv/*.cu \
            tasks/level2/conv_epilogue/*.cu); do
        ln -s "$PWD/$cu" "$PWD/${cu%.cu}.json" "$lib/"
        n=$((n + 1))
done
echo "tasks ($n): $(ls "$lib" | sed -n 's/\.json$//p' | tr '\n' ' ')" >"$log"
python3 tools/oracle/timing.py --tasks "$lib" --ref --trials 20 --md "$out/timing.md" >>"$log" 2>&1
echo "timing: exit $?" >>"$log"
python3 tools/oracle/oracle.py --tasks "$lib" --standalone --shapes tiny,small,default \
        --md "$out/oracle.md" >>"$log" 2>&1
echo "oracle: exit $?" >>"$log"
