#!/bin/sh
# nvrtc_check - compile every task reference and example with kevald's own
# compile worker (NVRTC, sm_90a) and print one line per file (noting register
# spills); exit 1 if any fails to compile.
# Usage: tools/tasks/nvrtc_check.sh [BUILD_DIR] [TASKS_DIR]
B=${1:-build}
T=${2:-tasks}
fail=0
n=0
for f in $(find "$T" -name '*.cu' | sort); do
        n=$((n + 1))
        out=$("$B/server/kevald" eval --compile --source "$f" --option -std=c++17 2>&1)
        if printf '%s' "$out" | grep -q '"verdict": "compiled"'; then
                if printf '%s' "$out" | grep -q '"spill_stores": [1-9]'; then
                        echo "ok   $f (register spills)"
                else
                        echo "ok   $f"
                fi
        else
                echo "FAIL $f"
                printf '%s\n' "$out" | grep -E '"log"|error|verdict|spill' | head -5
                fail=$((fail + 1))
        fi
done
echo "$n sources, $fail failed"
[ "$fail" -eq 0 ]
