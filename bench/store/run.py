#!/usr/bin/env python3
"""
bench/store/run.py - the store under the real server: SQLite against
PostgreSQL, and 1, 2 and 4 `kevald serve` processes on one PostgreSQL.

  scripts/pg-temp run -- python3 bench/store/run.py [--build build] [--n 20000] [--json out.json]

Everything is the real kevald binary on port 0 with its real compile workers;
the run stage is the CPU stand-in GPU worker of the fleet test
(tests/pylib/standin_gpu_worker.py: the real frame protocol, no GPU; work_s
0, so a job costs the store and the dispatcher, not a kernel). PostgreSQL is
the cluster scripts/pg-temp starts (fsync on; each measurement gets its own
fresh database); SQLite is a fresh file in a temporary folder of the same
machine. Both run in the same invocation, one after the other.

Method
  submissions/s  One host, `--gpus none` (nothing reaches the run stage).
                 4 client threads POST batches of 100 full-mode submissions
                 (8 distinct candidate sources, so the compile stage, which
                 runs meanwhile, is a compile-cache hit after the first of
                 each) until N are acknowledged; a 202 means the rows are
                 committed (durable: fsync'd WAL on both backends).
                 submissions/s = N / (last 202 - first POST). Then 16 threads
                 POST single submissions (2,000 requests): requests/s, each
                 its own acknowledged commit (group commit may merge them).
  claims/s       The N jobs just submitted (the filling host stopped with
                 SIGTERM) are drained by K hosts started together on that
                 store, each with 4 stand-in GPUs (one worker each). Every
                 job is claimed (run stage, plus the compile stage for any
                 job the filling host had not compiled), leased, finished.
                 jobs/s over the middle 80 % of finished_at (so start-up and
                 the tail do not count); claims/s = jobs/s x the claims the
                 drain made per job (the growth of `attempts`, which counts
                 the claims of every stage). SQLite: K = 1 (a
                 file is one host's store); PostgreSQL: K = 1, 2, 4, each on a
                 freshly filled database. Meanwhile the machine's CPU use
                 (/proc/stat) and, every 50 ms, pg_stat_activity: how often a
                 kevald backend was active, and how often it waited on a
                 heavyweight (row/transaction) lock, which is what claims
                 serialized on one row would show whatever the CPU count.
  wake-up        Two hosts on one PostgreSQL; P probes (a full job whose
                 stand-in run waits 0.1 s before it starts) submitted
                 alternately through each; both hosts long-poll every probe
                 (GET ?wait=30, parked before the job starts); latency = the
                 long-poll's answer - the moment the stand-in wrote the RESULT
                 frame (CLOCK_MONOTONIC, one clock for every process). Split
                 into the host that ran the job and the other one (woken by
                 LISTEN/NOTIFY); p50/p99/max.

Prints one table and, with --json, writes every figure to a file.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fleet"))


def setup_env(build):
    os.environ.setdefault("KEVALD_SOURCE_ROOT", str(ROOT))
    os.environ["KEVALD_BUILD_ROOT"] = str((ROOT / build).resolve() if not Path(build).is_absolute() else build)


def fill(host, n, threads=4, batch=100):
    """POST n submissions in batches from @threads threads; (seconds, ids)."""
    import httpx
    from fleetlib import full
    todo = list(range(0, n, batch))
    lock = threading.Lock()
    ids = []
    errors = []

    def work():
        with httpx.Client(base_url=host.url, timeout=300) as c:
            while True:
                with lock:
                    if not todo:
                        return
                    start = todo.pop()
                subs = [full(f"bench_{(start + i) % 8}", tags={"run_id": "bench"}) for i in range(min(batch, n - start))]
                for _ in range(100):
                    r = c.post("/v1/submissions", json={"submissions": subs})
                    if r.status_code in (429, 503):
                        time.sleep(float(r.headers.get("retry-after", "1")))
                        continue
                    break
                if r.status_code != 202:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    return
                with lock:
                    ids.extend(r.json()["ids"])

    dt = run_threads(work, threads)
    if errors:
        raise SystemExit(f"fill: {errors[:3]}")
    return dt, ids


def run_threads(work, n):
    """Run @work in @n threads at once; the seconds until the last one ended."""
    t0 = time.monotonic()
    ts = [threading.Thread(target=work) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.monotonic() - t0


def singles(host, requests=2000, threads=16):
    """@requests single-submission POSTs from @threads threads; requests/s."""
    import httpx
    from fleetlib import full
    left = [requests]
    lock = threading.Lock()
    bad = []

    def work():
        with httpx.Client(base_url=host.url, timeout=300) as c:
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                r = c.post("/v1/submissions", json=full("bench_0", tags={"run_id": "single"}))
                if r.status_code != 202:
                    bad.append(r.status_code)

    dt = run_threads(work, threads)
    if bad:
        raise SystemExit(f"singles: {len(bad)} refused ({bad[:5]})")
    return requests / dt


class PgSampler:
    """Samples pg_stat_activity of one database every @period s on one psql connection (a thread):
    how often a kevald backend was running a statement, and how often it waited on a heavyweight
    lock (a row or transaction lock: what claims serialized on one row would show)."""

    def __init__(self, dsn, period=0.05):
        import subprocess
        self.p = subprocess.Popen(["psql", "-X", "-q", "-At", "-F", "|", "-d", dsn], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.period, self.samples, self.active, self.lock_waits = period, 0, 0, 0
        self.events = {}
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        q = ("SELECT state, coalesce(wait_event_type, ''), coalesce(wait_event, '') FROM pg_stat_activity "
             "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend';\n"
             "\\echo __END__\n")
        while not self.stop_ev.is_set():
            self.p.stdin.write(q)
            self.p.stdin.flush()
            self.samples += 1
            for line in iter(self.p.stdout.readline, ""):
                line = line.strip()
                if line == "__END__":
                    break
                state, wtype, wev = (line.split("|") + ["", ""])[:3]
                if state == "active":
                    self.active += 1
                    if wtype == "Lock":
                        self.lock_waits += 1
                    if wtype:
                        self.events[f"{wtype}:{wev}"] = self.events.get(f"{wtype}:{wev}", 0) + 1
            time.sleep(self.period)

    def stop(self):
        self.stop_ev.set()
        self.t.join()
        self.p.stdin.close()
        self.p.wait()
        return {"samples": self.samples, "active": self.active, "lock_waits": self.lock_waits,
                "waits": dict(sorted(self.events.items(), key=lambda kv: -kv[1])[:6])}


def cpu_busy():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def drain(db, root, k, n_expected, tag):
    """Start @k hosts on @db and wait until nothing is left; (jobs/s, claims per job, seconds)."""
    from fleetlib import Host, rows, scalar
    before = scalar(db, "SELECT coalesce(sum(attempts), 0) AS a FROM submissions WHERE run_id = 'bench'")
    hosts = [Host(root, f"{tag}-drain{k}-{i}", db, host_id=(f"h{i}" if is_pg(db) else None), gpus="0,1,2,3",
                  knobs={"work_s": 0.0}) for i in range(k)]
    t0 = time.monotonic()
    for h in hosts:
        h.start()
    sampler = PgSampler(db) if is_pg(db) else None
    cpu0 = cpu_busy()
    try:
        while scalar(db, "SELECT count(*) AS n FROM submissions WHERE state <> 'done'"):
            if time.monotonic() - t0 > 1200:
                raise SystemExit(f"drain {tag} k={k}: not done after 20 min")
            time.sleep(0.2)
        wall = time.monotonic() - t0
    finally:
        cpu1 = cpu_busy()
        locks = sampler.stop() if sampler else None
        for h in hosts:
            h.stop()
    fin = sorted(r["f"] for r in rows(db, "SELECT finished_at AS f FROM submissions WHERE run_id = 'bench'"))
    if len(fin) != n_expected:
        raise SystemExit(f"drain {tag}: {len(fin)} finished, {n_expected} expected")
    lo, hi = fin[len(fin) // 10], fin[len(fin) * 9 // 10]
    jobs_s = (len(fin) * 8 // 10) / (hi - lo)
    after = scalar(db, "SELECT sum(attempts) AS a FROM submissions WHERE run_id = 'bench'")
    attempts = (float(after) - float(before)) / len(fin)  # claims made by the drain, per job
    per_host = {h.id: len(h.events("job")) for h in hosts}
    cpu = (cpu1[0] - cpu0[0]) / max(1, cpu1[1] - cpu0[1])
    return jobs_s, float(attempts), wall, per_host, cpu, locks


def is_pg(db):
    from fleetlib import is_pg as f
    return f(db)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", type=int, default=20000, help="submissions per fill")
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--hosts", default="1,2,4", help="PostgreSQL host counts for claims/s")
    ap.add_argument("--json")
    args = ap.parse_args()
    setup_env(args.build)
    from fleetlib import Host, create_pg_database, pct, probe_wakeups
    admin = os.environ.get("KEVALD_TEST_PG")
    if not admin:
        raise SystemExit("KEVALD_TEST_PG is not set: run under scripts/pg-temp run -- ...")
    root = Path(tempfile.mkdtemp(prefix="kevald-bench-store-"))
    out = {"n": args.n, "load_start": os.getloadavg(), "cpus": os.cpu_count(), "submit": {}, "singles": {}, "claims": {}, "wake": {}}

    def fresh(backend):
        if backend == "sqlite":
            return str(root / f"sq-{uuid.uuid4().hex[:6]}.db")
        return create_pg_database(admin, "bench_" + uuid.uuid4().hex[:8])

    runs = [("sqlite", 1)] + [("pg", int(k)) for k in args.hosts.split(",") if k.strip().isdigit()]
    for backend, k in runs:
        db = fresh(backend)
        filler = Host(root, f"{backend}-fill{k}", db, host_id=("f" if backend == "pg" else None), gpus="none")
        filler.start().wait_ready()
        dt, ids = fill(filler, args.n)
        subs_s = len(ids) / dt
        out["submit"].setdefault(backend, []).append(subs_s)
        print(f"{backend}: {len(ids)} submissions acknowledged in {dt:.2f} s: {subs_s:,.0f}/s", flush=True)
        if k == 1:
            rps = singles(filler)
            out["singles"][backend] = rps
            print(f"{backend}: single-submission POSTs: {rps:,.0f} requests/s", flush=True)
        t_stop = time.monotonic()
        rc = filler.stop()
        if rc != 0:  # reported, not fatal: the figures of the drain still stand
            note = f"{backend} x{k}: the filling host exited {rc} on SIGTERM ({time.monotonic() - t_stop:.0f} s)"
            out.setdefault("anomalies", []).append(note)
            print(note, flush=True)
        jobs_s, att, wall, per_host, cpu, locks = drain(db, root, k, args.n, backend)
        out["claims"][f"{backend}-{k}"] = {"jobs_s": jobs_s, "attempts": att, "claims_s": jobs_s * att,
                                           "wall_s": wall, "per_host": per_host, "cpu_busy": cpu, "pg": locks}
        print(f"{backend} x{k}: {jobs_s:,.0f} jobs/s, {att:.2f} claims/job -> {jobs_s * att:,.0f} claims/s "
              f"(drain wall {wall:.1f} s; machine CPU busy {cpu:.0%}; stand-in runs per host {per_host})"
              + (f"; PG backends sampled active {locks['active']} times in {locks['samples']} samples, "
                 f"{locks['lock_waits']} of them waiting on a row/transaction lock; top waits {locks['waits']}"
                 if locks else ""), flush=True)

    if args.probes <= 0:
        runs_table(out, runs)
        return
    db = fresh("pg")
    hosts = [Host(root, f"wake-{h}", db, host_id=h, gpus="0", knobs={"work_s": 0.0, "slow_s": 0.1})
             for h in ("a", "b")]
    for h in hosts:
        h.start()
    for h in hosts:
        h.wait_ready()
    probes = probe_wakeups(hosts, args.probes)
    for h in hosts:
        h.stop()
    for name, sel in (("other", lambda p: p["observer"] != p["ran_on"]), ("same", lambda p: p["observer"] == p["ran_on"])):
        xs = [p["latency_s"] * 1000 for p in probes if sel(p)]
        out["wake"][name] = {"n": len(xs), "p50_ms": pct(xs, 50), "p99_ms": pct(xs, 99), "max_ms": max(xs)}
        print(f"wake-up, {name} host: n={len(xs)} p50 {pct(xs, 50):.1f} ms p99 {pct(xs, 99):.1f} ms "
              f"max {max(xs):.1f} ms", flush=True)

    runs_table(out, runs)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


def runs_table(out, runs):
    print("\n| store | hosts | submissions/s (batches of 100) | single POSTs/s | jobs/s drained | claims/s "
          "| CPU busy | lock waits / active samples |")
    print("|---|---|---|---|---|---|---|---|")
    subs_i = {"sqlite": 0, "pg": 0}
    for backend, k in runs:
        c = out["claims"][f"{backend}-{k}"]
        s = out["submit"][backend][subs_i[backend]]
        subs_i[backend] += 1
        single = f"{out['singles'][backend]:,.0f}" if k == 1 else ""
        print(f"| {'SQLite' if backend == 'sqlite' else 'PostgreSQL'} | {k} | {s:,.0f} | {single} | "
              f"{c['jobs_s']:,.0f} | {c['claims_s']:,.0f} | {c['cpu_busy']:.0%} | "
              + (f"{c['pg']['lock_waits']} / {c['pg']['active']} |" if c["pg"] else "- |"))


if __name__ == "__main__":
    main()
