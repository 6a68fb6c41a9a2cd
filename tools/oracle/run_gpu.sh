#!/bin/sh
# run_gpu - the task-library checks on the GPU host, one stage per call (each
# stays within a 10-minute command limit), markdown tables written to OUTDIR.
#
#   tools/oracle/run_gpu.sh oracle     OUTDIR   references vs PyTorch, tiny + small (stand-alone, cupy)
#   tools/oracle/run_gpu.sh default    OUTDIR   references vs PyTorch at the default sizes
#   tools/oracle/run_gpu.sh degeneracy OUTDIR   degenerate candidates must fail, tiny + small
#   tools/oracle/run_gpu.sh timing     OUTDIR   torch eager and reference time at the default size
#   tools/oracle/run_gpu.sh dump       OUTDIR   the oracle + degeneracy through kevald eval --dump
#                                               (needs build/server/kevald and its workers)
# Extra arguments go to the script (e.g. --category conv). Then, on the
# development machine: python3 tools/tasks/gen_table.py --oracle OUTDIR/oracle.md
#   --degeneracy OUTDIR/degeneracy.md --timing OUTDIR/timing.md
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
timing)     python3 "$here/timing.py" --ref --md "$out/timing.md" "$@" ;;
dump)       python3 "$here/dump_check.py" --degeneracy --md "$out/dump-check.md" "$@" ;;
*) echo "usage: $0 oracle|default|degeneracy|timing|dump OUTDIR [args]" >&2; exit 2 ;;
esac
