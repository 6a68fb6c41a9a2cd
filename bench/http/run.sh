#!/usr/bin/env bash
# bench/http/run.sh - HTTP throughput of the real kevald, measured with wrk.
#
#   bench/http/run.sh [BUILD_DIR]        (default: build; env knobs below)
#
# Starts `kevald serve` on 127.0.0.1:0 with a fresh SQLite file in a temp
# folder, one compile worker and no GPU, warms the compile cache with one
# source (a real NVRTC compile), then measures, REPEATS times each:
#   1. single  - POST /v1/submissions, one compile-mode submission per request
#                (every 202 is a committed, fsync'd row)
#   2. batch   - POST /v1/submissions with BATCH submissions per request
#                (reported as kernels/s = requests/s * BATCH)
#   3. read    - GET /v1/submissions/{id}, round-robin over recent ids
#   4. latency - the same reads paced at half of the median read rate:
#                p50/p99 from wrk's latency histogram
# and prints one line per run plus a summary (median and min..max); the
# summary also goes to $RESULTS (JSON). The same source is submitted every
# time, so the dispatcher finishes each job from the compile cache: ingest
# is what is measured, with the dispatcher running beside it as in production.
# Order: single, drain, read, latency, batch, drain (reads run on a drained
# queue; the drain times give the dispatcher's rate for cache-hit jobs).
#
# Knobs: DURATION (s, default 10), REPEATS (3), CONNS (single/read
# connections, 32), BATCH (1000), BATCH_CONNS (4), THREADS (wrk threads, 1),
# SERVER_THREADS (HTTP pool, 0 = server default), RESULTS (file),
# KEVALD_ARGS (extra serve flags), DRAIN_S (longest wait for the queue to
# drain after the single and batch phases, 120), NICE (e.g. -20: run server and wrk
# ahead of other work on a shared machine), PERF=1 (perf record the server during
# the first single and read run: $WORK/perf-*.data).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-${BUILD:-$root/build}}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
kevald=$build/server/kevald
DURATION=${DURATION:-10}
REPEATS=${REPEATS:-3}
CONNS=${CONNS:-32}
BATCH=${BATCH:-1000}
BATCH_CONNS=${BATCH_CONNS:-4}
THREADS=${THREADS:-1}
SERVER_THREADS=${SERVER_THREADS:-0}
PY=/usr/bin/python3
# NICE=-20 (root) runs the server and wrk ahead of other work on a shared box.
nice=
[ -n "${NICE:-}" ] && nice="nice -n $NICE"
[ -x "$PY" ] || PY=python3

[ -x "$kevald" ] || { echo "run.sh: no $kevald (build first: meson setup build && ninja -C build)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "run.sh: wrk not installed (apt-get install wrk)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/kevald-bench.XXXXXX)
RESULTS=${RESULTS:-$WORK/results.json}
server_pid=
cleanup() {
        if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
                kill -TERM "$server_pid"
                for _ in $(seq 600); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
                if kill -0 "$server_pid" 2>/dev/null; then
                        echo "run.sh: kevald did not exit within 60 s of SIGTERM; killing it" >&2
                        kill -KILL "$server_pid"
                fi
                wait "$server_pid" || true
        fi
        [ "${KEEP:-0}" = 1 ] || rm -f "$WORK"/k.db "$WORK"/k.db-wal "$WORK"/k.db-shm
}
trap cleanup EXIT

tasks_args=()
[ -d "$root/tasks" ] && tasks_args=(--tasks "$root/tasks")
# shellcheck disable=SC2086
$nice "$kevald" serve --listen 127.0.0.1:0 --db "$WORK/k.db" --port-file "$WORK/port" --gpus none \
        --compile-workers 1 --threads "$SERVER_THREADS" --max-queued 100000000 --log-level warn \
        --libexec "$build/worker" "${tasks_args[@]}" ${KEVALD_ARGS:-} 2>"$WORK/server.log" &
server_pid=$!
for _ in $(seq 300); do
        [ -s "$WORK/port" ] && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
        sleep 0.1
done
url="http://127.0.0.1:$(cat "$WORK/port")"

# Bodies and the warm-up compile.
"$PY" - "$WORK" "$BATCH" <<'PY'
import json, sys
work, batch = sys.argv[1], int(sys.argv[2])
src = ('extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)\n'
       '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n')
one = {"mode": "compile", "source": src, "tags": {"run_id": "bench"}}
open(f"{work}/single.json", "w").write(json.dumps(one))
open(f"{work}/batch.json", "w").write(json.dumps({"submissions": [one] * batch}))
PY
for _ in $(seq 100); do
        curl -fsS "$url/readyz" >/dev/null 2>&1 && break
        sleep 0.1
done
warm=$(curl -sS -H 'Content-Type: application/json' --data-binary @"$WORK/single.json" "$url/v1/submissions?wait=120")
echo "$warm" | "$PY" -c 'import json,sys; b=json.load(sys.stdin); assert b.get("verdict")=="compiled", b' \
        || { echo "run.sh: warm-up compile failed: $warm" >&2; exit 1; }

nproc_=$(nproc)
echo "# kevald HTTP benchmark: $(date -u +%FT%TZ), $nproc_ cores, $(uname -r), build $build"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"
echo "# niceness of server and wrk: ${NICE:-0}"
echo "# duration ${DURATION}s x $REPEATS; wrk -t$THREADS; single/read -c$CONNS; batch $BATCH x -c$BATCH_CONNS"

# run_wrk NAME CONNS SCRIPT ARGS... -> appends "NAME rps p50 p99 non2xx errors" to $WORK/runs
run_wrk() {
        local name=$1 conns=$2 script=$3; shift 3
        local out
        out=$($nice wrk -t"$THREADS" -c"$conns" -d"${DURATION}s" --timeout 10s -s "$here/$script" "$url" -- "$@" 2>&1)
        local line
        line=$(printf '%s\n' "$out" | sed -n 's/^RESULT //p')
        if [ -z "$line" ]; then
                printf '%s\n' "$out" >&2
                echo "run.sh: wrk gave no result" >&2
                exit 1
        fi
        printf '%s %s\n' "$name" "$line" >>"$WORK/runs"
        printf '%-8s %s\n' "$name" "$line"
}


perf_start() {
        perf_pid=
        if [ "${PERF:-0}" = 1 ] && command -v perf >/dev/null; then
                perf record -g -p "$server_pid" -o "$WORK/perf-$1.data" >/dev/null 2>&1 &
                perf_pid=$!
        fi
}
perf_stop() {
        if [ -n "${perf_pid:-}" ]; then
                kill -INT "$perf_pid"; wait "$perf_pid" || true
                perf report -i "$WORK/perf-$1.data" --no-children --percent-limit 2 --stdio 2>/dev/null \
                        | grep -v '^#' | grep '%' | head -25 >"$WORK/perf-$1.txt" || true
        fi
}

: >"$WORK/runs"
: >"$WORK/cpu"
# Per-thread CPU ticks (USER_HZ) of the server, and the ingest counters, around each phase.
threads() { for t in /proc/"$server_pid"/task/*; do echo "$(basename "$t") $(cat "$t/comm" | tr ' ' _) $(awk '{print $14 + $15}' "$t/stat")"; done | sort -n; }
ingest() { curl -fsS "$url/v1/stats" | "$PY" -c 'import json,sys; i=json.load(sys.stdin).get("ingest",{}); print(i.get("commits",0), i.get("submissions",0))'; }
phase_begin() { threads >"$WORK/t0"; read -r c0 s0 < <(ingest); w0=$(date +%s.%N); }
phase_end() {
        local name=$1 w1 c1 s1
        w1=$(date +%s.%N); threads >"$WORK/t1"; read -r c1 s1 < <(ingest)
        { printf '%s wall %.1fs;' "$name" "$(echo "$w1 - $w0" | bc)"
          join "$WORK/t0" "$WORK/t1" | awk '{d = $5 - $3; if (d > 0) printf " %s/%s %.2fs", $2, $1, d / 100}'
          if [ "$s1" -gt "$s0" ]; then printf '; ingest %d commits for %d submissions (%.1f per commit, %.0f commits/s)' \
                  $((c1 - c0)) $((s1 - s0)) "$(echo "($s1 - $s0) / ($c1 - $c0 + 0.0001)" | bc -l)" \
                  "$(echo "($c1 - $c0) / ($w1 - $w0)" | bc -l)"; fi
          echo; } >>"$WORK/cpu"
}

phase_begin
for r in $(seq "$REPEATS"); do
        [ "$r" = 1 ] && perf_start single
        run_wrk single "$CONNS" submit.lua "$WORK/single.json"
        [ "$r" = 1 ] && perf_stop single
done
phase_end single

# Let the dispatcher finish the backlog (cache hits) before reads, so reads
# measure reads; the drain rate is the dispatcher's throughput.
drain() {
        local t0 t1 n
        t0=$(date +%s.%N)
        for _ in $(seq $(( ${DRAIN_S:-120} * 10 ))); do
                # Cheap probes (indexed), not /v1/stats (which scans the history).
                n=0
                for st in queued compiling compiled running; do
                        n=$(( n + $(curl -fsS "$url/v1/submissions?state=$st&limit=1" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))') ))
                done
                [ "$n" = 0 ] && break
                sleep 0.1
        done
        t1=$(date +%s.%N)
        echo "$1 drain $(printf '%.1f' "$(echo "$t1 - $t0" | bc)")s, $n left" >>"$WORK/cpu"
}
drain "after single:"

# Ids to read: the newest 1000 (half finished, half still queued is fine).
curl -fsS "$url/v1/submissions?limit=1000" | "$PY" -c \
        'import json,sys; [print(x["id"]) for x in json.load(sys.stdin)["items"]]' >"$WORK/ids"
[ -s "$WORK/ids" ] || { echo "run.sh: no ids to read" >&2; exit 1; }
phase_begin
for r in $(seq "$REPEATS"); do
        [ "$r" = 1 ] && perf_start read
        run_wrk read "$CONNS" read.lua "$WORK/ids"
        [ "$r" = 1 ] && perf_stop read
done
phase_end read

# Half the median read rate, paced: gap per connection = conns * 1000 / rate.
half=$("$PY" - "$WORK/runs" <<'PY'
import json, statistics, sys
rps = [json.loads(l.split(" ", 1)[1])["rps"] for l in open(sys.argv[1]) if l.startswith("read ")]
print(int(statistics.median(rps) / 2))
PY
)
# A short gap (5 ms) keeps the connection count near what a saturating run uses
# (see README: many idle keep-alive connections cost latency of their own);
# the achieved rate is conns * 1000 / (gap + latency), reported beside the target.
gap=${LAT_GAP_MS:-5}
lat_conns=$(( half * gap / 1000 ))
[ "$lat_conns" -lt 4 ] && lat_conns=4
[ "$lat_conns" -gt 2000 ] && lat_conns=2000
# Calibrate: a short paced run, then scale the connections to the target.
cal=$(KEVALD_GAP_MS=$gap DURATION=3 $nice wrk -t"$THREADS" -c"$lat_conns" -d3s -s "$here/read.lua" "$url" -- "$WORK/ids" 2>&1 \
      | sed -n 's/^RESULT //p' | "$PY" -c 'import json,sys; print(int(json.load(sys.stdin)["rps"]))')
if [ "${cal:-0}" -gt 0 ]; then
        lat_conns=$(( lat_conns * half / cal ))
        [ "$lat_conns" -lt 4 ] && lat_conns=4
        [ "$lat_conns" -gt 2000 ] && lat_conns=2000
fi
echo "# latency at half load: target $half req/s: $lat_conns connections x 1 request per ~${gap} ms (calibration run: $cal req/s)"
phase_begin
for r in $(seq "$REPEATS"); do
        KEVALD_GAP_MS=$gap run_wrk latency "$lat_conns" read.lua "$WORK/ids"
done
phase_end latency

phase_begin
for r in $(seq "$REPEATS"); do
        [ "$r" = 1 ] && perf_start batch
        run_wrk batch "$BATCH_CONNS" submit.lua "$WORK/batch.json"
        [ "$r" = 1 ] && perf_stop batch
done
phase_end batch
drain "after batch:"

"$PY" - "$WORK/runs" "$BATCH" "$RESULTS" "$half" <<'PY'
import json, statistics, sys
runs, batch, out, half = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
by = {}
for line in open(runs):
    name, js = line.split(" ", 1)
    by.setdefault(name, []).append(json.loads(js))
def stat(vals):
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "runs": vals}
summary = {
    "single_per_s": stat([r["rps"] for r in by["single"]]),
    "batch_kernels_per_s": stat([r["rps"] * batch for r in by["batch"]]),
    "batch_requests_per_s": stat([r["rps"] for r in by["batch"]]),
    "reads_per_s": stat([r["rps"] for r in by["read"]]),
    "half_load_target_per_s": half,
    "half_load_achieved_per_s": stat([r["rps"] for r in by["latency"]]),
    "half_load_p50_ms": stat([r["p50_ms"] for r in by["latency"]]),
    "half_load_p99_ms": stat([r["p99_ms"] for r in by["latency"]]),
    "non2xx": {k: sum(r["non2xx"] for r in v) for k, v in by.items()},
    "socket_errors": {k: sum(r["socket_errors"] for r in v) for k, v in by.items()},
}
json.dump(summary, open(out, "w"), indent=1)
targets = {"single_per_s": 1000, "batch_kernels_per_s": 20000, "reads_per_s": 10000}
print("\n# summary (median, min..max over %d runs)" % len(by["single"]))
for k in ("single_per_s", "batch_kernels_per_s", "reads_per_s", "half_load_achieved_per_s",
          "half_load_p50_ms", "half_load_p99_ms"):
    s = summary[k]
    t = targets.get(k)
    if k == "half_load_p99_ms":
        t_txt = "target < 20 ms: " + ("met" if s["median"] < 20 else "MISSED")
    elif t:
        t_txt = f"target >= {t}: " + ("met" if s["median"] >= t else "MISSED")
    else:
        t_txt = ""
    print(f"{k:26s} {s['median']:12.2f}   {s['min']:.2f}..{s['max']:.2f}   {t_txt}")
print("non-2xx:", summary["non2xx"], " socket errors:", summary["socket_errors"])
PY
echo "# server CPU by thread (seconds) and ingest group commits, per phase:"
sed 's/^/#   /' "$WORK/cpu"
for f in "$WORK"/perf-*.txt; do
        [ -f "$f" ] && { echo "# perf top symbols, $(basename "$f" .txt):"; cat "$f"; }
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# results: $RESULTS  (work dir $WORK)"
