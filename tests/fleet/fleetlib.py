"""
What the fleet test (tests/fleet/test_fleet.py) and the store benchmark
(bench/store/run.py) share: a `kevald serve` host with real compile workers
and the CPU stand-in GPU worker, the submissions they send, and reading the
store directly (psql for PostgreSQL, the sqlite3 module for a file).

A Host gets its own libexec folder: a symlink to the build's kevald-compile,
and tests/pylib/standin_gpu_worker.py put there as kevald-gpu (its
install()); the stand-in writes fake_gpu.log there (which job ran when, in
which process; when it sent each RESULT) and reads its knobs from
fake_gpu.json there (the supervisor scrubs its children's environment, so
that is the only channel). Every result it sends says it is a stand-in's.
"""
import copy
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))
from kevaldserver import FIXTURE_TASKS, KEVALD, LIBEXEC, SLOW  # noqa: E402,F401
import standin_gpu_worker as standin  # noqa: E402

# The stand-in's identity here: every result says it is a stand-in's, no GPU ran it.
STANDIN = {"name": "CPU stand-in (kevald fleet test; no GPU ran this)", "standin": True}


class FleetError(AssertionError):
    pass


VECADD_TASK = {
    "name": "fleet_vecadd", "title": "Vector add", "description": "c = a + b", "level": 1,
    "category": "elementwise", "params": {"N": "length"}, "shapes": [{"name": "default", "N": 4096}],
    "buffers": [
        {"name": "a", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
        {"name": "b", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
        {"name": "c", "dtype": "f32", "shape": ["N"], "role": "out"},
    ],
    "reference": {
        "source": 'extern "C" __global__ void vecadd_ref(const float *a, const float *b, float *c, int n)'
                  ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }',
        "plan": [{"kernel": "vecadd_ref", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                  "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}],
    },
}


def kernel_source(name):
    return (f'extern "C" __global__ void {name}(const float *a, const float *b, float *c, int n)'
            ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }')


def full(name, **extra):
    """A full-mode submission whose candidate kernel is @name (the stand-in reads its FAKEV_ marker)."""
    sub = {"mode": "full", "task_spec": copy.deepcopy(VECADD_TASK), "source": kernel_source(name),
           "plan": [{"kernel": name, "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                     "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}]}
    sub.update(extra)
    return sub


# ---- the store, read directly --------------------------------------------------

def is_pg(db):
    return str(db).startswith(("postgresql://", "postgres://"))


def with_dbname(dsn, name):
    u = urlsplit(dsn)
    return urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))


def psql(dsn, sql):
    p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise FleetError(f"psql failed ({p.returncode}): {sql}\n{p.stderr}")
    return p.stdout


def create_pg_database(admin_dsn, name):
    """CREATE DATABASE @name on the cluster of @admin_dsn; its DSN."""
    psql(admin_dsn, f"CREATE DATABASE {name}")
    return with_dbname(admin_dsn, name)


def rows(db, sql):
    """The rows of @sql as dicts, from PostgreSQL (@db a DSN) or a SQLite file."""
    if is_pg(db):
        return json.loads(psql(db, f"SELECT coalesce(json_agg(t), '[]') FROM ({sql}) t").strip())
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(sql)]
    finally:
        con.close()


def scalar(db, sql):
    r = rows(db, sql)
    return next(iter(r[0].values())) if r else None


# ---- hosts -------------------------------------------------------------------

class Host:
    """One `kevald serve [--host-id ID] --db DB` with real compile workers and the stand-in GPU worker
    (@gpus fake GPU indexes, one worker each; "none" for no run stage)."""

    def __init__(self, root, name, db, host_id=None, gpus="0,1", lease_s=None, knobs=None, args=()):
        self.id = name
        self.dir = Path(root) / name
        self.libexec = self.dir / "libexec"
        self.libexec.mkdir(parents=True)
        compile_bin = LIBEXEC / "kevald-compile"
        if not compile_bin.exists():
            raise FleetError(f"no kevald-compile at {compile_bin} (build first)")
        os.symlink(compile_bin, self.libexec / "kevald-compile")
        self.log = standin.install(self.libexec, {**STANDIN, **(knobs or {"work_s": 0.005})})
        self.server_log = self.dir / "server.log"
        self.argv = [str(KEVALD), "serve", "--listen", "127.0.0.1:0", "--db", str(db),
                     "--port-file", str(self.dir / "port"), "--tasks", str(FIXTURE_TASKS),
                     "--libexec", str(self.libexec), "--gpus", gpus, "--compile-workers", "1"]
        if gpus != "none":
            self.argv += ["--gpu-workers-per-gpu", "1"]
        if host_id:
            self.argv += ["--host-id", host_id]
        if lease_s:
            self.argv += ["--lease-s", str(lease_s)]
        self.argv += list(args)
        self.n_gpus = 0 if gpus == "none" else len(gpus.split(","))
        self.proc = None
        self.port = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=30.0):
        port_file = self.dir / "port"
        if port_file.exists():
            port_file.unlink()
        with open(self.server_log, "ab") as log:
            log.write(f"==== {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, cwd=self.dir)
        deadline = time.monotonic() + timeout * SLOW
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise FleetError(f"host {self.id}: kevald exited {self.proc.returncode} at start:\n{self.log_tail()}")
            try:
                self.port = int(port_file.read_text().strip())
                return self
            except (FileNotFoundError, ValueError):
                time.sleep(0.02)
        raise FleetError(f"host {self.id}: no port file within {timeout}s:\n{self.log_tail()}")

    def wait_ready(self, timeout=60.0):
        """Until /readyz is 200 and every stand-in GPU worker said HELLO."""
        deadline = time.monotonic() + timeout * SLOW
        body = None
        while time.monotonic() < deadline:
            try:
                r = httpx.get(self.url + "/readyz", timeout=5)
                body = r.json()
                gpus = body.get("gpus") or []
                if r.status_code == 200 and len(gpus) == self.n_gpus and all(g.get("workers_ready") for g in gpus):
                    return body
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.05)
        raise FleetError(f"host {self.id}: not ready within {timeout}s: {body}\n{self.log_tail()}")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=60.0):
        """SIGTERM and wait; the exit status, "timeout", or None if never started."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "timeout"

    def events(self, kind=None):
        """The stand-in's log lines (of @kind when given)."""
        try:
            lines = self.log.read_text().splitlines()
        except FileNotFoundError:
            return []
        evs = []
        for line in lines:
            try:
                evs.append(json.loads(line))
            except ValueError:
                pass  # a line cut short by kill -9
        return [e for e in evs if kind is None or e["ev"] == kind]

    def log_tail(self, n=40):
        try:
            return "\n".join(self.server_log.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return "(no log)"


def pct(xs, p):
    """The @p-th percentile of @xs (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def probe_wakeups(hosts, n, submit_via=None):
    """Long-poll wake-up latencies: @n probes (a full job whose stand-in run waits slow_s before it
    starts), each long-polled on every host of @hosts while it runs; set against the moment the
    stand-in sent its RESULT. Returns [{"id", "ran_on", "observer", "latency_s"}] (one per host
    per probe). Raises FleetError when a long-poll was not parked before the job started or did
    not answer `done`."""
    import concurrent.futures as cf
    out = []
    clients = {h.id: httpx.Client(base_url=h.url, timeout=60 * SLOW) for h in hosts}

    def longpoll(h, sid):
        t_sent = time.monotonic()
        r = clients[h.id].get(f"/v1/submissions/{sid}", params={"wait": 30})
        return h.id, t_sent, time.monotonic(), r

    with cf.ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        for i in range(n):
            via = (submit_via or hosts)[i % len(submit_via or hosts)]
            r = clients[via.id].post("/v1/submissions", json=full("probe_FAKEV_slow", tags={"run_id": "probe"}))
            if r.status_code != 202:
                raise FleetError(f"probe POST via {via.id}: {r.status_code} {r.text[:300]}")
            sid = r.json()["id"]
            answers = [fu.result() for fu in [pool.submit(longpoll, h, sid) for h in hosts]]
            sent = [(h.id, e) for h in hosts for e in h.events("sent") if e["id"] == sid]
            starts = [e["t"] for h in hosts for e in h.events("start") if e["id"] == sid]
            if len(sent) != 1:
                raise FleetError(f"probe {sid}: RESULT sent {len(sent)} times: {sent}")
            ran_on, ev = sent[0]
            for hid, t_get, t_answer, resp in answers:
                if resp.status_code != 200 or resp.json().get("state") != "done":
                    raise FleetError(f"probe {sid}: long-poll on {hid}: {resp.status_code} {resp.text[:300]}")
                if not t_get < min(starts):
                    raise FleetError(f"probe {sid}: the long-poll on {hid} was sent after the job started")
                out.append({"id": sid, "ran_on": ran_on, "observer": hid, "latency_s": t_answer - ev["t"]})
    for c in clients.values():
        c.close()
    return out
