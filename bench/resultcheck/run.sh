#!/usr/bin/env bash
# bench/resultcheck/run.sh BUILD_DIR - what checking a compile RESULT costs
# (server/dispatch/resultcheck.c) against the compile-cache read it follows.
#
# Starts `kevald serve --gpus none` on a fresh SQLite store, compiles every
# library task's reference source as a compile-only submission (so each gets
# its plain and fenced CUBIN, as a candidate does), stops the server, then
# times store_cache_get() and resultcheck_compile() on every cache entry
# (bench-resultcheck.c, built here against BUILD_DIR's static libraries).
set -euo pipefail
build=$(realpath "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT

cc -O2 -std=c11 -D_GNU_SOURCE -I"$src" -I"$build" -o "$tmp/bench" "$src/bench/resultcheck/bench-resultcheck.c" \
        "$build/server/libkevald-server.a" "$build/common/libkevald-common.a" \
        $(pkg-config --libs jansson sqlite3 libpq libuv libmicrohttpd) -lm -lpthread

"$build/server/kevald" serve --listen 127.0.0.1:0 --port-file "$tmp/port" --db "$tmp/k.db" --gpus none \
        --tasks "$src/tasks" --libexec "$build/worker" --compile-workers 2 >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -s "$tmp/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$tmp/port")"
python3 - "$url" <<'PY'
import json, sys, time, urllib.request
url = sys.argv[1]
def get(p):
    return json.load(urllib.request.urlopen(url + p, timeout=60))
for _ in range(300):
    try:
        if urllib.request.urlopen(url + "/readyz", timeout=5).status == 200:
            break
    except Exception:
        time.sleep(0.1)
names = [t["name"] for t in get("/v1/tasks")["items"]]
subs = [{"mode": "compile", "source": get(f"/v1/tasks/{n}")["reference"]["source"]} for n in names]
req = urllib.request.Request(url + "/v1/submissions", data=json.dumps({"submissions": subs}).encode(),
                             headers={"Content-Type": "application/json"})
ids = json.load(urllib.request.urlopen(req, timeout=60))["ids"]
for sid in ids:
    while get(f"/v1/submissions/{sid}?wait=30")["state"] != "done":
        pass
print(f"compiled {len(ids)} task references", file=sys.stderr)
PY
kill $pid; wait $pid || true
arch=$(python3 -c "import sqlite3,json,sys; c=sqlite3.connect(sys.argv[1]); print(json.loads(c.execute('SELECT compile FROM compile_cache LIMIT 1').fetchone()[0]).get('arch','sm_90a'))" "$tmp/k.db")
python3 -c "import sqlite3,sys; [print(k.hex()) for (k,) in sqlite3.connect(sys.argv[1]).execute('SELECT key FROM compile_cache WHERE cubin IS NOT NULL ORDER BY length(cubin)')]" "$tmp/k.db" \
        | "$tmp/bench" "$tmp/k.db" "$arch"
