#!/usr/bin/env python3
"""
bench/http/abuse.py - the HTTP front door under abuse, and one call's cost
(issues 26 and 24), against a real `kevald serve` (port 0, a fresh SQLite
file in a temp folder, --gpus none, the real compile workers).

    abuse.py memory  --kevald BUILD/server/kevald [--kind empty|numbers|strings] [--size BYTES] [--senders 4]
    abuse.py loris   --kevald BUILD/server/kevald [--slow 5000] [--seconds 20]
    abuse.py latency --kevald BUILD/server/kevald --client clients/python [--calls 200]
    abuse.py batch   --kevald BUILD/server/kevald --client clients/python [--n 500] [--distinct]

memory: RSS of the server (VmRSS, sampled every 10 ms) before, at its peak
  while SENDERS clients each POST one malicious body at once, and 2 s after
  the last answer. Bodies: `empty` = {"submissions":[{},{},...]} (issue 26's
  probe), `numbers` = one submission with a huge array of 0s, `strings` =
  one submission whose source is SIZE bytes, `valid` = 4096 valid
  compile-mode submissions filling SIZE (run it with --serve-args
  "--max-queued 1": parsed, validated, then refused 503). SIZE defaults to the server's
  body limit (--body-limit when given in --serve-args, else the server's
  default read from `kevald serve --help`).
loris: SLOW connections from 127.0.0.1 that each send a request line and
  then one header byte a second, re-dialled as the server closes them (at
  most --redial-per-s a second after the first SLOW; 0: as fast as it can);
  meanwhile a normal client from 127.0.0.2 calls GET /v1/tasks and POSTs a
  compile-mode submission every 200 ms. Reports how many normal calls were
  answered, within 1 s, p50 and max, and how many lines the server logged.
latency: CALLS single POSTs of a compile-mode submission (no wait) with the
  client package at --client (its default transport), one at a time; p50,
  p90, p99 in ms.
batch: N compile-mode submissions, submit_batch() then wait_all() with the
  client package at --client; seconds from the first byte to the last
  result. --distinct: every kernel a distinct source (N real compiles);
  otherwise one source, so after the first compile every job is a cache hit
  and the figure is the HTTP path's. --bad F: every round(1/F)-th kernel has
  a compile error (an undefined name). The RESULT counts the verdicts. --one-by-one: submit() each kernel (one
  POST each, as an agent calls) instead of submit_batch().
Each mode prints one `RESULT {json}` line. The temp folder (server.log)
is removed at the end unless KEEP=1.
"""
import argparse
import collections
import json
import os
import re
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

KERNEL = ('extern "C" __global__ void k(float *x, int n) {\n'
          '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }\n')


BAD_KERNEL = ('extern "C" __global__ void k(float *x, int n) {\n'
              '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= undefined_scale; }\n')


def sub(distinct=True, bad=False):
    src = (f"// {uuid.uuid4().hex}\n" if distinct else "") + (BAD_KERNEL if bad else KERNEL)
    return {"mode": "compile", "source": src}


class Server:
    def __init__(self, kevald, args):
        self.dir = Path(tempfile.mkdtemp(prefix="kevald-abuse-"))
        build = Path(kevald).resolve().parent.parent
        argv = [str(kevald), "serve", "--listen", "127.0.0.1:0", "--db", str(self.dir / "k.db"),
                "--port-file", str(self.dir / "port"), "--gpus", "none", "--log-level", "warn",
                "--libexec", str(build / "worker"), "--tasks", str(Path(__file__).resolve().parents[2] / "tasks")]
        self.log = open(self.dir / "server.log", "wb")
        self.proc = subprocess.Popen(argv + list(args), stdout=self.log, stderr=self.log)
        for _ in range(3000):
            try:
                self.port = int((self.dir / "port").read_text())
                break
            except (FileNotFoundError, ValueError):
                time.sleep(0.01)
        else:
            raise SystemExit("server did not start: " + (self.dir / "server.log").read_text()[-2000:])
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(3000):   # a compile worker said hello
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                    s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if b" 200 " in s.recv(4096):
                        break
            except OSError:
                pass
            time.sleep(0.05)

    def rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def log_lines(self):
        self.log.flush()
        return sum(1 for _ in open(self.dir / "server.log", "rb"))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)


def raw_post(port, body, src="127.0.0.1", timeout=120):
    """POST @body on a fresh connection; (status, seconds)."""
    t0 = time.monotonic()
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    head = (f"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    data = b""
    try:
        s.sendall(head + body)
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.1 (\d+)", data)
    return (int(m.group(1)) if m else None), time.monotonic() - t0, data[data.find(b"\r\n\r\n") + 4:][:300]


def default_body_limit(kevald):
    text = subprocess.run([kevald, "serve", "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--body-limit .*?\(default: (\d+)([KMG]?)\)", text)
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(m.group(1)) * mult[m.group(2)] if m else 32 << 20


def make_body(kind, size):
    if kind == "empty":
        n = (size - 20) // 3
        return b'{"submissions":[' + b"{}," * (n - 1) + b"{}]}"
    if kind == "numbers":
        head = b'{"submissions":[{"mode":"compile","source":"x","x":['
        n = (size - len(head) - 10) // 2
        return head + b"0," * (n - 1) + b"0]}]}"
    if kind == "valid":
        one = len(json.dumps(sub(False))) + 1
        pad = max(0, (size - 32) // 4096 - one - 4)
        item = json.dumps({"mode": "compile", "source": "//" + "p" * pad + "\n" + KERNEL}).encode()
        return b'{"submissions":[' + b",".join([item] * 4096) + b"]}"
    head = b'{"submissions":[{"mode":"compile","source":"'
    return head + b"y" * (size - len(head) - 10) + b'"}]}'


def mode_memory(a):
    srv = Server(a.kevald, a.serve_args)
    size = a.size
    if not size:
        m = re.search(r"--body-limit[= ](\d+)", " ".join(a.serve_args))
        size = int(m.group(1)) if m else default_body_limit(a.kevald)
        size -= 1024
    body = make_body(a.kind, size)
    time.sleep(1.0)
    base = srv.rss_mb()
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], srv.rss_mb())
            except OSError:
                pass
            time.sleep(0.01)

    st = threading.Thread(target=sample)
    st.start()
    out = [None] * a.senders
    ts = [threading.Thread(target=lambda i=i: out.__setitem__(i, raw_post(srv.port, body)))
          for i in range(a.senders)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.monotonic() - t0
    time.sleep(2.0)
    after = srv.rss_mb()
    stop.set()
    st.join()
    srv.stop()
    print("RESULT " + json.dumps({
        "mode": "memory", "kind": a.kind, "body_bytes": len(body), "senders": a.senders,
        "statuses": [o[0] for o in out], "answer_s": round(took, 2), "rss_base_mb": round(base, 1),
        "rss_peak_mb": round(peak[0], 1), "rss_after_2s_mb": round(after, 1),
        "detail": out[0][2].decode("utf-8", "replace")[:160]}))


def mode_loris(a):
    srv = Server(a.kevald, a.serve_args)
    sel = selectors.DefaultSelector()
    line = b"GET /v1/tasks HTTP/1.1\r\nHost: x\r\nX-Slow: "
    conns = {}
    stats = {"dialled": 0, "closed_by_server": 0, "408": 0}
    stop = threading.Event()

    def dial():
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect_ex(("127.0.0.1", srv.port))
        except OSError:
            s.close()
            return
        conns[s.fileno()] = [s, False]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        stats["dialled"] += 1

    def attacker():
        last_tick = time.monotonic()
        t_start, budget_used = time.monotonic(), 0
        while not stop.is_set():
            # Re-dial what the server closed, at most --redial-per-s (0: as fast as it goes).
            budget = (int((time.monotonic() - t_start) * a.redial_per_s) + a.slow if a.redial_per_s
                      else budget_used + 200)
            while len(conns) < a.slow and budget_used < budget and not stop.is_set():
                dial()
                budget_used += 1
                if stats["dialled"] % 200 == 0:
                    break
            for key, ev in sel.select(timeout=0.05):
                s = key.fileobj
                c = conns.get(s.fileno())
                if c is None:
                    continue
                if ev & selectors.EVENT_READ:
                    try:
                        d = s.recv(4096)
                    except OSError:
                        d = b""
                    if d.startswith(b"HTTP/1.1 408"):
                        stats["408"] += 1
                    if not d or d.startswith(b"HTTP/"):
                        sel.unregister(s)
                        del conns[s.fileno()]
                        s.close()
                        stats["closed_by_server"] += 1
                        continue
                if ev & selectors.EVENT_WRITE and not c[1]:
                    try:
                        s.send(line)
                        c[1] = True
                    except OSError:
                        pass
                    sel.modify(s, selectors.EVENT_READ)
            if time.monotonic() - last_tick >= 1.0:   # one header byte a second on each
                last_tick = time.monotonic()
                for s, sent in list(conns.values()):
                    if sent:
                        try:
                            s.send(b"a")
                        except OSError:
                            pass
        for s, _ in conns.values():
            s.close()

    at = threading.Thread(target=attacker)
    at.start()
    time.sleep(3.0)   # let the attack fill up
    lines0 = srv.log_lines()
    times, fails = [], 0
    end = time.monotonic() + a.seconds
    body = json.dumps(sub()).encode()
    while time.monotonic() < end:
        for req in (b"GET /v1/tasks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", None):
            t0 = time.monotonic()
            try:
                if req is None:
                    st, _, _ = raw_post(srv.port, body, src="127.0.0.2", timeout=5)
                    ok = st == 202
                else:
                    s = socket.socket()
                    s.settimeout(5)
                    s.bind(("127.0.0.2", 0))
                    s.connect(("127.0.0.1", srv.port))
                    s.sendall(req)
                    ok = s.recv(64).startswith(b"HTTP/1.1 200")
                    s.close()
            except OSError:
                ok = False
            if ok:
                times.append(time.monotonic() - t0)
            else:
                fails += 1
            time.sleep(0.2)
    open_slow = len(conns)
    stop.set()
    at.join()
    lines = srv.log_lines() - lines0
    srv.stop()
    times.sort()
    print("RESULT " + json.dumps({
        "mode": "loris", "slow_target": a.slow, "redial_per_s": a.redial_per_s, "slow_open_at_end": open_slow, **stats,
        "normal_calls": len(times) + fails, "answered": len(times),
        "within_1s": sum(1 for t in times if t <= 1.0),
        "p50_ms": round(statistics.median(times) * 1e3, 1) if times else None,
        "max_ms": round(times[-1] * 1e3, 1) if times else None,
        "server_log_lines_during": lines}))


def load_client(path):
    sys.path.insert(0, str(Path(path).resolve()))
    import kevald   # noqa: E402
    return kevald


def mode_latency(a):
    kevald = load_client(a.client)
    srv = Server(a.kevald, a.serve_args)
    times = []
    with kevald.Client(srv.url) as c:
        c.submit(sub())   # connect, warm
        for _ in range(a.calls):
            s = sub()
            t0 = time.perf_counter()
            c.submit(s)
            times.append((time.perf_counter() - t0) * 1e3)
    srv.stop()
    times.sort()
    q = lambda p: round(times[min(len(times) - 1, int(p * len(times)))], 2)   # noqa: E731
    print("RESULT " + json.dumps({"mode": "latency", "calls": a.calls, "p50_ms": q(0.5), "p90_ms": q(0.9),
                                  "p99_ms": q(0.99), "client": str(a.client)}))


def mode_batch(a):
    kevald = load_client(a.client)
    srv = Server(a.kevald, a.serve_args)
    with kevald.Client(srv.url) as c:
        c.evaluate(sub(False), timeout=120)   # the shared source compiled once, before the clock
        # every round(1 / bad)-th kernel does not compile (an RL batch's share of mistakes)
        step = round(1 / a.bad) if a.bad > 0 else 0
        subs = [sub(a.distinct, bad=step > 0 and i % step == step - 1) for i in range(a.n)]
        t0 = time.monotonic()
        if a.one_by_one:
            ids = [c.submit(x) for x in subs]
        else:
            ids = c.submit_batch(subs)
        t_sub = time.monotonic() - t0
        res = c.wait_all(ids, timeout=600)
        took = time.monotonic() - t0
    srv.stop()
    print("RESULT " + json.dumps({"mode": "batch", "n": a.n, "distinct": a.distinct, "one_by_one": a.one_by_one,
                                  "submit_s": round(t_sub, 3),
                                  "collected_s": round(took, 3), "done": sum(1 for r in res if r.done),
                                  "verdicts": dict(collections.Counter(r.verdict for r in res)),
                                  "bad": a.bad, "client": str(a.client)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["memory", "loris", "latency", "batch"])
    ap.add_argument("--kevald", required=True)
    ap.add_argument("--client", default=str(Path(__file__).resolve().parents[2] / "clients" / "python"))
    ap.add_argument("--kind", default="empty", choices=["empty", "numbers", "strings", "valid"])
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--slow", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--redial-per-s", type=float, default=1000.0)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--distinct", action="store_true")
    ap.add_argument("--bad", type=float, default=0.0, help="batch: the share of kernels that do not compile")
    ap.add_argument("--one-by-one", action="store_true")
    ap.add_argument("--serve-args", default="", help="extra `kevald serve` flags, one string")
    a = ap.parse_args()
    a.serve_args = a.serve_args.split()
    {"memory": mode_memory, "loris": mode_loris, "latency": mode_latency, "batch": mode_batch}[a.mode](a)


if __name__ == "__main__":
    main()
