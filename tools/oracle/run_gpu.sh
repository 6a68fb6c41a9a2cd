#!/bin/sh
# run_gpu - the task-library checks on the GPU host, one stage per call (each
# stays within a 10-minute command limit), markdown tables written to OUTDIR.
#
#   tools/oracle/run_gpu.sh oracle     OUTDIR   references vs PyTorch, tiny + small (stand-alone, cupy)
#   tools/oracle/run_gpu.sh default    OUTDIR   references vs PyTorch at the default sizes
#   tools/oracle/run_gpu.sh degeneracy OUTDIR   degenerate candidates must fail, tiny + small
#   tools/oracle/run_gpu.sh timing     OUTDIR   torch eager and stand-alone reference time at the
#                                               default size, the tasks with a cuBLAS step (and l1_5)
#   tools/oracle/run_gpu.sh dump       OUTDIR   the oracle + degeneracy through kevald eval --dump
#                                               (needs build/server/kevald and its workers)
# Extra arguments go to the script (e.g. --category conv). Then, on the
# development machine: python3 tools/tasks/gen_table.py
#   --oracle OUTDIR/oracle.md OUTDIR/oracle-default.md --degeneracy OUTDIR/degeneracy.md
#   --timing-ref OUTDIR/timing-gemm.md OUTDIR/timing-conv.md
# (rows are merged into docs/tasks.md's tables; see docs/tasks.md).
set -e
stage=$1
out=${2:-${OUT:-/tmp/kevald-oracle}}
shift 2 || true
mkdir -p "$out"
here=$(dirname "$0")
case "$stage" in
oracle)     python3 "$here/oracle.py" --standalone --shapes tiny,small --md "$out/oracle.md" "$@" ;;
default)    python3 "$here/oracle.py" --standalone --shapes default --md "$out/oracle-default.md" "$@" ;;
degeneracy) python3 "$here/degeneracy.py" --standalone --shapes tiny,small --md "$out/degeneracy.md" "$@" ;;
timing)     python3 "$here/timing.py" --ref --trials 20 --category matmul,gemm_epilogue,gemm_norm,gemm_reduction \
                --md "$out/timing-gemm.md" "$@"
            python3 "$here/timing.py" --ref --trials 20 --category conv --only l1_86_,l1_87_ \
                --md "$out/timing-conv.md" "$@" ;;
dump)       python3 "$here/dump_check.py" --degeneracy --md "$out/dump-check.md" "$@" ;;
*) echo "usage: $0 oracle|default|degeneracy|timing|dump OUTDIR [args]" >&2; exit 2 ;;
esac
