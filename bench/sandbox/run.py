#!/usr/bin/python3
"""
bench/sandbox/run.py - what the workers' confinement costs, measured on the
real service.

    bench/sandbox/run.py [--build DIR] [--n N] [--repeats R]
                         [--mode compile|full] [--body FILE] [--gpus SPEC]

For each setting (sandbox on: the default; off: `kevald serve --sandbox=false`,
which starts the workers with --no-sandbox, SANDBOX_PROFILE_NONE) it starts
`kevald serve` on 127.0.0.1:0 with a fresh SQLite file and one worker of each
kind, then:

  1. worker start-up: the time from `kevald-compile` exec to its HELLO (the
     sandbox_enter() layers, the warm-up compile, sandbox_lock()), measured
     directly on the worker binary, --repeats times;
  2. latency: N submissions one after another (alternating between a
     sandboxed and an unsandboxed server running side by side), each unique (a comment with a
     counter) so the compile cache never answers; per submission the
     worker-reported compile_ms and the end-to-end wall time of
     POST ?wait= until the result.

It prints medians, p90s and the sandboxed/unsandboxed ratio, and writes them
as JSON to --out. Default: compile mode (no GPU needed). The GPU variant, for
the GPU host: --mode full --gpus auto --body SUBMISSION.json (a full
submission for a library task; its "source" gets the unique comment), or
--case vadd_correct (a tests/gpu case). With two servers on one GPU host,
the two GPU workers share the GPU: submissions alternate, never overlap.
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import httpx
except ImportError:  # the GPU host has no httpx: the little this script needs, on urllib
    import types
    import urllib.error
    import urllib.request

    class _Resp:
        def __init__(self, code, data):
            self.status_code, self._data = code, data

        def json(self):
            return json.loads(self._data or b"null")

    def _call(method, url, body=None, timeout=300):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return _Resp(r.status, r.read())
        except urllib.error.HTTPError as e:
            return _Resp(e.code, e.read())
        except OSError as e:
            raise httpx.HTTPError(str(e)) from e

    class _Client:
        def __init__(self, base_url, timeout=300):
            self.base, self.timeout = base_url, timeout

        def get(self, path):
            return _call("GET", self.base + path, timeout=self.timeout)

        def post(self, path, json=None):
            return _call("POST", self.base + path, json, self.timeout)

    httpx = types.SimpleNamespace(HTTPError=type("HTTPError", (Exception,), {}), Client=_Client,
                                  get=lambda url, timeout=5: _call("GET", url, timeout=timeout))

ROOT = Path(__file__).resolve().parents[2]

COMPILE_SOURCE = (
    "#include <cuda_fp16.h>\n"
    'extern "C" __global__ void scale(const __half *x, __half *y, float a, int n) {\n'
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = __float2half(a * __half2float(x[i]));\n"
    "}\n")


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def hello_time(worker, sandbox, env):
    """Seconds from exec to the worker's HELLO frame."""
    argv = [str(worker)] + ([] if sandbox else ["--no-sandbox"])
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    head = p.stdout.read(16)
    t = time.perf_counter() - t0
    if len(head) == 16:
        _, ftype, jl, bl = struct.unpack("<IIII", head)
        p.stdout.read(jl + bl)
    p.stdin.close()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return t


def start_server(build, workdir, sandbox, gpus, tasks=None):
    port_file = workdir / "port"
    argv = [str(build / "server" / "kevald"), "serve", "--listen", "127.0.0.1:0",
            "--db", str(workdir / "k.db"), "--port-file", str(port_file), "--gpus", gpus,
            "--libexec", str(build / "worker"), "--compile-workers", "1",
            "--sandbox=" + ("true" if sandbox else "false"), "--log-level", "warn"]
    if tasks:
        argv += ["--tasks", str(tasks)]
    log = open(workdir / "server.log", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"kevald exited {proc.returncode}; see {workdir / 'server.log'}")
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.02)
    url = f"http://127.0.0.1:{int(port_file.read_text())}"
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return proc, url


def submit_one(c, body, tag):
    """One unique submission; (compile_ms, wall_ms)."""
    b = dict(body)
    b["source"] = body["source"] + f"\n// bench {tag} {time.time_ns()}\n"
    t0 = time.perf_counter()
    d = c.post("/v1/submissions?wait=120", json=b).json()
    while d.get("state") != "done":
        d = c.get(f"/v1/submissions/{d['id']}?wait=60").json()
    t = (time.perf_counter() - t0) * 1000
    if d.get("verdict") in ("internal_error", "compile_error", "rejected", "runtime_error", "timeout"):
        sys.exit(f"benchmark submission failed: {json.dumps(d)[:1500]}")
    return ((d.get("result") or {}).get("compile") or {}).get("compile_ms", 0.0), t


def summary(v):
    return {"median": statistics.median(v), "p90": pct(v, 90), "min": min(v), "n": len(v)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("BUILD", str(ROOT / "build")))
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--mode", choices=["compile", "full"], default="compile")
    ap.add_argument("--body", help="submission JSON (for --mode full)")
    ap.add_argument("--case", help="for --mode full: a tests/gpu case (source NAME.cu, plan "
                    "NAME.plan.json, task from tests/gpu/cases.json; serves tests/gpu/tasks)")
    ap.add_argument("--gpus", default=None)
    ap.add_argument("--out", default="bench-sandbox.json")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    tasks = None
    if a.case:
        gpu = ROOT / "tests" / "gpu"
        cases = json.loads((gpu / "cases.json").read_text())
        cases = cases.get("cases", cases) if isinstance(cases, dict) else cases
        case = next(c for c in cases if c["name"] == a.case)
        src = case.get("source", a.case)
        # The task goes inline (task_spec, reference source included): the GPU
        # suite's task files are not a servable library (names differ from files).
        spec = json.loads((gpu / "tasks" / (case["task"] + ".json")).read_text())
        ref = dict(spec["reference"])
        if "source_file" in ref:
            ref["source"] = (gpu / "tasks" / ref.pop("source_file")).read_text()
        spec["reference"] = ref
        body = {"task_spec": spec, "source": (gpu / "cases" / (src + ".cu")).read_text()}
        body.update(json.loads((gpu / "cases" / (src + ".plan.json")).read_text()))
    elif a.body:
        body = json.loads(Path(a.body).read_text())
    elif a.mode == "full":
        sys.exit("--mode full needs --case NAME or --body SUBMISSION.json")
    else:
        body = {"mode": "compile", "source": COMPILE_SOURCE}
    body["mode"] = a.mode
    gpus = a.gpus or ("none" if a.mode == "compile" else "auto")
    env = {"PATH": "/usr/bin:/bin", "KEVALD_PARENT_PID": str(os.getpid())}
    if os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    worker = build / "worker" / "kevald-compile"

    res = {"mode": a.mode, "n": a.n}
    keys = {True: "sandbox", False: "no_sandbox"}
    hellos = {True: [], False: []}
    cms = {True: [], False: []}
    wms = {True: [], False: []}
    # Alternate the two settings so that drift (other load, thermal, page
    # cache) hits both alike.
    for _ in range(a.repeats):
        for sb in (True, False):
            hellos[sb].append(hello_time(worker, sb, env) * 1000)
    with tempfile.TemporaryDirectory(prefix="kevald-bench-sandbox-") as d:
        servers = {}
        try:
            for sb in (True, False):
                (Path(d) / keys[sb]).mkdir()
                servers[sb] = start_server(build, Path(d) / keys[sb], sb, gpus, tasks)
            clients = {sb: httpx.Client(base_url=servers[sb][1], timeout=300) for sb in servers}
            active = {}
            for sb, c in clients.items():
                layers = c.get("/readyz").json().get("layers", {}).get("compile", {})
                active[sb] = sorted(k for k, v in layers.items() if v.get("active"))
                for _ in range(2):
                    submit_one(c, body, "warm-up")
            for i in range(a.n):
                for sb in ((True, False) if i % 2 == 0 else (False, True)):
                    cm, wm = submit_one(clients[sb], body, keys[sb])
                    cms[sb].append(cm)
                    wms[sb].append(wm)
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(timeout=60)
    for sb in (True, False):
        res[keys[sb]] = {"worker_hello_ms": summary(hellos[sb]), "compile_ms": summary(cms[sb]),
                         "end_to_end_ms": summary(wms[sb]), "active_layers": active[sb]}
    for m in ("worker_hello_ms", "compile_ms", "end_to_end_ms"):
        res["ratio_" + m] = res["sandbox"][m]["median"] / res["no_sandbox"][m]["median"]
    print(f"mode {a.mode}, {a.n} unique submissions one after another, medians (p90):")
    print(f"{'':22}{'sandbox':>18}{'no sandbox':>18}{'ratio':>8}")
    for m in ("worker_hello_ms", "compile_ms", "end_to_end_ms"):
        s, u = res["sandbox"][m], res["no_sandbox"][m]
        print(f"{m:22}{s['median']:10.2f} ({s['p90']:6.2f}){u['median']:10.2f} ({u['p90']:6.2f})"
              f"{res['ratio_' + m]:8.3f}")
    print("active layers with the sandbox:", ", ".join(res["sandbox"]["active_layers"]))
    print("active layers without:", ", ".join(res["no_sandbox"]["active_layers"]) or "(none)")
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
