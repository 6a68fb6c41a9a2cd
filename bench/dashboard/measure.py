#!/usr/bin/env python3
"""
Latency of the dashboard's JSON routes against the real `kevald serve`.

  measure.py --kevald BUILD/server/kevald --db FILLED.db [--requests 300] [--clients 1]

Starts the server on a copy-free port-0 listen over the database (filled by
fill.c), warms each route up (10 requests), then sends --requests requests
per route, one after the other on one keep-alive connection per client, and
prints p50, p99 and max in milliseconds (wall clock at the client: request
sent to body read) as a Markdown table. Every answer must be 200.
"""
import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def routes(conn):
    """The routes to measure; ids and names picked from the store's own answers."""
    def get(path):
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200, (path, r.status, body[:300])
        return json.loads(body)

    runs = get("/v1/dashboard/runs")["items"]
    big = max(runs, key=lambda r: r["evaluated"])
    small = min(runs, key=lambda r: r["evaluated"])
    task = get("/v1/dashboard/tasks?source=history")["items"][0]["task"]
    sub = get(f"/v1/dashboard/run?id={big['run_id']}")["tasks"][0]["best_id"]
    mid = (big["min_step"] + big["max_step"]) // 2
    return [
        ("now (60 min)", "/v1/dashboard/now?window=60"),
        ("now (1 day)", "/v1/dashboard/now?window=1440"),
        ("runs", "/v1/dashboard/runs"),
        (f"run, {big['evaluated']:,} results", f"/v1/dashboard/run?id={big['run_id']}"),
        (f"run, {big['run_id']} steps {mid}..{mid + 9}", f"/v1/dashboard/run?id={big['run_id']}&from_step={mid}&to_step={mid + 9}"),
        (f"run, {small['evaluated']:,} results", f"/v1/dashboard/run?id={small['run_id']}"),
        ("tasks (library, a page of 50)", "/v1/dashboard/tasks"),
        ("tasks (library, all)", "/v1/dashboard/tasks?limit=1000"),
        ("tasks (history)", "/v1/dashboard/tasks?source=history"),
        ("task (leaderboard page 1)", f"/v1/dashboard/tasks/{task}"),
        ("task (leaderboard offset 1,000)", f"/v1/dashboard/tasks/{task}?offset=1000"),
        ("submission (turns)", f"/v1/dashboard/submissions/{sub}"),
        ("/metrics (histograms)", "/metrics"),
        ("/ (the page)", "/"),
    ]


def run_route(port, path, n, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        dt = time.perf_counter() - t0
        if r.status != 200:
            raise SystemExit(f"{path}: {r.status}")
        out.append(dt * 1000)
    conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kevald", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--clients", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kevald-dash-bench-") as d:
        port_file = os.path.join(d, "port")
        log = open(os.path.join(d, "server.log"), "wb")
        p = subprocess.Popen([a.kevald, "serve", "--listen", "127.0.0.1:0", "--db", a.db, "--port-file", port_file,
                              "--gpus", "none", "--compile-workers", "1", "--log-level", "warn"],
                             stdout=log, stderr=log)
        try:
            for _ in range(300):
                if os.path.exists(port_file) and open(port_file).read().strip():
                    break
                time.sleep(0.05)
            port = int(open(port_file).read())
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            todo = routes(conn)
            print(f"| route | p50 ms | p99 ms | max ms | bytes |  ({a.clients} client(s), {a.requests} requests each)")
            print("|---|---|---|---|---|")
            for name, path in todo:
                conn.request("GET", path)
                r = conn.getresponse()
                size = len(r.read())
                warm = []
                run_route(port, path, 10, warm)
                times = []
                threads = [threading.Thread(target=run_route, args=(port, path, a.requests, times))
                           for _ in range(a.clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                times.sort()
                p99 = times[min(len(times) - 1, int(round(0.99 * len(times))) - 1)]
                print(f"| {name} | {statistics.median(times):.1f} | {p99:.1f} | {times[-1]:.1f} | {size:,} |",
                      flush=True)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
