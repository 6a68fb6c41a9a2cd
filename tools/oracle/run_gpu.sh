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
#   tools/oracle/run_gpu.sh refs       OUTDIR [TASKS]
#                                               the rewritten references (issue 25): kevald's reference
#                                               time at the default size (bench/tasks/selfeval.py, with
#                                               the yardsticks; timing.py --ref for those with a cuBLAS
#                                               step), then the oracle at tiny, small and
#                                               default; TASKS: comma list, @FILE, or "all" (default
#                                               @tools/oracle/refs-tasks.txt). About 9 minutes at most
#                                               (KEVALD_REFS_BUDGET_S, default 530): each step runs
#                                               under `timeout` so the later ones still run. Writes
#                                               OUTDIR/refs-selfeval.{json,md}, refs-timing-ref.md
#                                               (stand-alone, the tasks with a cuBLAS step),
#                                               refs-oracle.md, refs-oracle-default.md and
#                                               refs-log.txt; exit 1 if any step failed or ran
#                                               out of time (rc 124).
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
refs)       list=${1:-@$here/refs-tasks.txt}
            [ $# -gt 0 ] && shift
            sel="--names $list"
            [ "$list" = all ] && sel=
            budget=${KEVALD_REFS_BUDGET_S:-530}
            start=$(date +%s)
            left() { echo $((budget - ($(date +%s) - start))); }
            # seconds for a step: PCT % of what is left, at least 5 (`timeout 0` would not limit)
            share() { t=$(( $(left) * $1 / 100 )); [ "$t" -ge 5 ] || t=5; echo $t; }
            log="$out/refs-log.txt"
            set +e
            fail=0
            { echo "refs: tasks $list, budget ${budget} s, $(date -u +%FT%TZ)"
              nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
              python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
              echo "== selfeval (default shape set)"
              timeout $(share 45) python3 bench/tasks/selfeval.py --kevald build/server/kevald \
                  --shapes first --timing '{"budget_ms": 600, "target_precision": 0.01}' $sel \
                  --out "$out/refs-selfeval.json" --md "$out/refs-selfeval.md"
              rc=$?; [ $rc -eq 0 ] || fail=1
              echo "selfeval rc=$rc at $(( $(date +%s) - start )) s"
              echo "== stand-alone reference time, the tasks with a cuBLAS step (selfeval skips them)"
              timeout $(share 15) python3 "$here/timing.py" --ref --trials 20 --cublas-only $sel \
                  --md "$out/refs-timing-ref.md"
              rc=$?; [ $rc -eq 0 ] || fail=1
              echo "timing --ref rc=$rc at $(( $(date +%s) - start )) s"
              echo "== oracle tiny,small"
              timeout $(share 30) python3 "$here/oracle.py" --standalone --shapes tiny,small $sel \
                  --md "$out/refs-oracle.md"
              rc=$?; [ $rc -eq 0 ] || fail=1
              echo "oracle tiny,small rc=$rc at $(( $(date +%s) - start )) s"
              echo "== oracle default"
              timeout $(share 100) python3 "$here/oracle.py" --standalone --shapes default $sel \
                  --md "$out/refs-oracle-default.md"
              rc=$?; [ $rc -eq 0 ] || fail=1
              echo "oracle default rc=$rc at $(( $(date +%s) - start )) s"
            } >"$log" 2>&1
            tail -n 40 "$log"
            exit $fail ;;
*) echo "usage: $0 oracle|default|degeneracy|timing|dump|refs OUTDIR [args]" >&2; exit 2 ;;
esac
