#!/usr/bin/env bash
# The PyTorch worker on a GPU host, without the server: kevald-torch (build and
# run roles, sandboxed) judges the ModelNew samples in samples/ (drive.py) and
# prints each verdict and timing. If the sandboxed run fails to start a worker
# (or a worker dies by SIGSYS), the same samples run again with --no-sandbox so
# the judge is still checked, and the sandbox failure is printed first.
# Needs: build/ (meson, this tree) and .devlibs/ carried; python3 with torch.
#   tests/gpu/torch/run.sh            (OUT defaults to /tmp/kevald-torch-out)
# Env: KEVALD_TORCH_PYTHON (default python3), KEVALD_GPU_INDEX (default 0),
# KEVALD_TORCH_SKIP_STRACE=1 skips the first step (the system calls of an
# unsandboxed run worker under strace, checked against the torch-run allowlist
# by syscalls.py). Files: $OUT/{strace,sandboxed,nosandbox}/torch_gpu.json,
# $OUT/syscalls.txt, each step's stderr (the workers' logs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
OUT=${OUT:-/tmp/kevald-torch-out}
mkdir -p "$OUT"
[ -d "$root/.devlibs" ] && export LD_LIBRARY_PATH="$root/.devlibs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
py=${KEVALD_TORCH_PYTHON:-python3}
echo "== host: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
"$py" -c 'import sys, torch; print("== python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' || { echo "FAIL: no torch in $py"; exit 1; }
command -v ninja >/dev/null || "$py" -c 'import ninja' 2>/dev/null || echo "== note: no ninja on PATH (load_inline needs it)"

# The calls a run worker makes after its HELLO, measured unsandboxed (strace; -A: one worker per
# job, each appends its trace), against the torch-run allowlist: what the profile would trap, all at once rather than one SIGSYS at a time.
if [ "${KEVALD_TORCH_SKIP_STRACE:-0}" != 1 ] && command -v strace >/dev/null; then
    echo "== measuring the run role's system calls (unsandboxed, strace)"
    KEVALD_TORCH_WRAP_RUN="strace -f -qq -A -o $OUT/strace-run.txt" "$py" "$here/drive.py" --python "$py" \
        --no-sandbox --out "$OUT/strace" --ext-root /tmp/kevald-torch-ext-strace \
        --only correct_cuda,plain_torch,linear_relu_fused,stream_trick \
        > "$OUT/strace.stdout" 2> "$OUT/strace.stderr"
    tail -2 "$OUT/strace.stdout"
    "$py" "$here/syscalls.py" "$OUT/strace-run.txt" | tee "$OUT/syscalls.txt" | grep -v '^  ok '
fi

echo "== sandboxed"
"$py" "$here/drive.py" --python "$py" --out "$OUT/sandboxed" 2> "$OUT/sandboxed.stderr"
rc=$?
grep -E 'forbidden system call|start-up failed|Traceback|Error' "$OUT/sandboxed.stderr" | sort | uniq -c | head -20
if grep -q 'FAILED TO START\|forbidden system call' "$OUT/sandboxed/torch_gpu.json" "$OUT/sandboxed.stderr" 2>/dev/null || [ $rc -ne 0 ]; then
    echo "== the sandboxed run did not pass (exit $rc): again without the sandbox, to check the judge"
    "$py" "$here/drive.py" --python "$py" --no-sandbox --keep-ext --out "$OUT/nosandbox" 2> "$OUT/nosandbox.stderr"
    rc2=$?
    grep -E 'Traceback|Error' "$OUT/nosandbox.stderr" | sort | uniq -c | head -20
    echo "== RESULT: sandboxed exit $rc, unsandboxed exit $rc2 (0 = every sample as expected); logs in $OUT"
    exit 1
fi
echo "== RESULT: every sample as expected, sandboxed; logs in $OUT"
