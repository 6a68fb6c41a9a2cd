#!/bin/bash
# run_gpu.sh - the client examples in full mode on the GPU host (for the lead).
#
# Starts `kevald serve` on a free port with the GPU(s), runs refine.py,
# rollout.py, the CLI and plot_history.py against it, stops the server, and
# leaves the logs, the database and the PNG under $OUT.
#
#   usage (repository root, GPU host):
#     export LD_LIBRARY_PATH=$PWD/.devlibs:/usr/local/cuda/lib64
#     B=build COUNT=256 OUT=$OUT bash clients/examples/run_gpu.sh
#
# B: the build folder carried over (default build); COUNT: rollout size
# (default 256); OUT: where results go (default /tmp/kevald-examples);
# MODE=compile runs the same plumbing without a GPU (--gpus none; a smoke test).
# The examples need only python3 (httpx optional: urllib fallback;
# matplotlib optional: plot_history prints its tables without it).
set -u
B=$(cd "${B:-build}" && pwd) || exit 1
COUNT=${COUNT:-256}
OUT=${OUT:-/tmp/kevald-examples}
MODE=${MODE:-full}
GPUS=auto; [ "$MODE" = compile ] && GPUS=none
mkdir -p "$OUT"
export PYTHONPATH=$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}
export MPLBACKEND=Agg
rc_all=0

rm -f "$OUT/port"
"$B/server/kevald" serve --listen 127.0.0.1:0 --db "$OUT/kevald.db" --port-file "$OUT/port" \
        --libexec "$B/worker" --tasks "$PWD/tasks" --gpus $GPUS --log-level info > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER' EXIT
trap 'exit 1' INT TERM
for _ in $(seq 1 300); do [ -s "$OUT/port" ] && break; sleep 0.1; done
if [ ! -s "$OUT/port" ]; then echo "server did not start:"; tail -30 "$OUT/server.log"; exit 1; fi
URL=http://127.0.0.1:$(cat "$OUT/port")
export KEVALD_URL=$URL
for _ in $(seq 1 150); do
        python3 - "$URL" "$MODE" <<'PY' && break
import json, sys, urllib.request
try:
    r = json.load(urllib.request.urlopen(sys.argv[1] + "/readyz", timeout=2))
except Exception:
    sys.exit(1)
sys.exit(0 if r.get("gpus_available", 0) > 0 or (r.get("ready") and sys.argv[2] == "compile") else 1)
PY
        sleep 0.2
done
python3 -c "import json,urllib.request,sys; r=json.load(urllib.request.urlopen(sys.argv[1]+'/readyz')); print('ready:', r.get('mode'), 'gpus', r.get('gpus_available'))" "$URL" || true

echo "== CLI: kevald submit (the task's example kernel and plan), $MODE mode"
timeout 120 "$B/server/kevald" submit tasks/level1/activation/l1_19_relu.example.cu --task l1_19_relu \
        --mode $MODE --timing fast --wait=100 | tee "$OUT/cli.txt"
echo "exit status ${PIPESTATUS[0]} (0 = correct, or compiled in compile mode)"

echo "== refine.py --mode $MODE"
timeout 240 python3 clients/examples/refine.py --mode $MODE | tee "$OUT/refine.txt"
r=${PIPESTATUS[0]}; echo "refine exit $r"; [ "$r" = 0 ] || rc_all=1

echo "== rollout.py --mode $MODE --count $COUNT"
timeout 420 python3 clients/examples/rollout.py --mode $MODE --count "$COUNT" --timing fast --timeout 400 ${SHAPES:+--shapes $SHAPES} \
        --no-progress | tee "$OUT/rollout.txt"
r=${PIPESTATUS[0]}; echo "rollout exit $r"; [ "$r" = 0 ] || rc_all=1

echo "== plot_history.py"
timeout 60 python3 clients/examples/plot_history.py --db "$OUT/kevald.db" --out "$OUT/history.png" | tail -12

echo "== history (CLI)"
"$B/server/kevald" history --limit 5
exit $rc_all
