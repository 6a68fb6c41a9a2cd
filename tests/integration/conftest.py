"""
Integration harness: the real `kevald` binary on port 0 with a real SQLite
file in a temporary folder, compile workers from the build tree, no GPU.

KEVALD_BUILD_ROOT (the meson build dir) and KEVALD_SOURCE_ROOT come from the
meson test environment; run by hand, they default to ../../build-apitest and
the checkout. A Server is started with `kevald serve --listen 127.0.0.1:0
--db DIR/k.db --port-file DIR/port --gpus none`, waited for through the port
file, and stopped with SIGTERM; the fixtures assert that it exits 0 (the
graceful-shutdown contract). Its stderr goes to DIR/server.log, printed when a
test fails.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = Path(os.environ.get("KEVALD_SOURCE_ROOT", HERE.parent.parent))
BUILD_ROOT = Path(os.environ.get("KEVALD_BUILD_ROOT", SOURCE_ROOT / "build-apitest"))
KEVALD = BUILD_ROOT / "server" / "kevald"
LIBEXEC = BUILD_ROOT / "worker"
SANITIZED = bool(os.environ.get("ASAN_OPTIONS") or os.environ.get("UBSAN_OPTIONS"))
# Sanitized builds are several times slower; scale waits with this.
SLOW = 4.0 if SANITIZED else 1.0

PROBLEM_JSON = "application/problem+json"


def task_dir():
    """The task library the servers load: the project's, else the test fixtures."""
    lib = SOURCE_ROOT / "tasks"
    if lib.is_dir() and any(lib.rglob("*.json")):
        return lib
    return SOURCE_ROOT / "tests" / "fixtures" / "tasks"


class Server:
    """One `kevald serve` process. Not thread-safe; tests drive it from one thread."""

    def __init__(self, workdir, args=(), db=None, env=None):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else self.dir / "k.db"
        self.args = list(args)
        self.env = env
        self.proc = None
        self.port = None
        self.log_path = self.dir / "server.log"
        self.starts = 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=30.0):
        if not KEVALD.exists():
            pytest.fail(f"no kevald binary at {KEVALD} (build first)")
        port_file = self.dir / "port"
        if port_file.exists():
            port_file.unlink()
        argv = [str(KEVALD), "serve", "--listen", "127.0.0.1:0", "--db", str(self.db),
                "--port-file", str(port_file), "--gpus", "none"]
        if not any(a == "--tasks" or a.startswith("--tasks=") for a in self.args):
            argv += ["--tasks", str(task_dir())]
        if not any(a.startswith("--libexec") for a in self.args) and LIBEXEC.is_dir():
            argv += ["--libexec", str(LIBEXEC)]
        if not any(a.startswith("--compile-workers") for a in self.args):
            argv += ["--compile-workers", "1"]
        argv += self.args
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"==== start {self.starts}: {' '.join(argv)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env, cwd=self.dir)
        log.close()
        deadline = time.monotonic() + timeout * SLOW
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"kevald exited {self.proc.returncode} at start:\n{self.log_tail()}")
            try:
                text = port_file.read_text().strip()
                if text:
                    self.port = int(text)
                    return self
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait()
        pytest.fail(f"kevald wrote no port file within {timeout}s:\n{self.log_tail()}")

    def wait_ready(self, timeout=30.0):
        """Wait until /readyz says ready (a compile worker said HELLO)."""
        deadline = time.monotonic() + timeout * SLOW
        last = None
        while time.monotonic() < deadline:
            try:
                r = httpx.get(self.url + "/readyz", timeout=5)
                last = r
                if r.status_code == 200:
                    return r
            except httpx.HTTPError as e:
                last = e
            time.sleep(0.05)
        pytest.fail(f"not ready within {timeout}s: {last!r} {getattr(last, 'text', '')}\n{self.log_tail()}")

    def stop(self, sig=signal.SIGTERM, timeout=60.0):
        """Signal the server and wait; return its exit status (None if not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "timeout"
                self.proc = None
                return rc
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def client(self, **kw):
        kw.setdefault("timeout", 30.0 * SLOW)
        return httpx.Client(base_url=self.url, **kw)

    def log_tail(self, n=60):
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def kevald(self, *args, check=True):
        """Run another kevald subcommand against this server's db; return stdout."""
        p = subprocess.run([str(KEVALD), *args], capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"kevald {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p


@pytest.fixture(scope="module")
def tmp_module():
    with tempfile.TemporaryDirectory(prefix="kevald-it-") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def server(tmp_module):
    """A default server shared by one test file; must exit 0 on SIGTERM."""
    s = Server(tmp_module / "default").start()
    s.wait_ready()
    yield s
    rc = s.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{s.log_tail()}"


@pytest.fixture(scope="module")
def client(server):
    with server.client() as c:
        yield c


@pytest.fixture
def make_server(tmp_path):
    """Factory: make_server(args...) starts a dedicated server, stopped (and asserted 0) at teardown."""
    started = []

    def make(*args, db=None, ready=True, name=None):
        s = Server(tmp_path / (name or f"s{len(started)}"), args, db=db).start()
        started.append(s)
        if ready:
            s.wait_ready()
        return s

    yield make
    for s in started:
        rc = s.stop()
        assert rc in (0, None), f"kevald exited {rc} on SIGTERM:\n{s.log_tail()}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    if rep.failed:
        for name in ("server", "make_server"):
            s = item.funcargs.get(name) if hasattr(item, "funcargs") else None
            if isinstance(s, Server):
                rep.sections.append(("kevald log", s.log_tail()))


# ---- request builders ------------------------------------------------------

GOOD_KERNEL = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = a * x[i] + y[i];
}
'''

BROKEN_KERNEL = r'''
extern "C" __global__ void broken(float *y)
{
        y[0] = undefined_name_xq;
}
'''


def unique(source):
    """Make @source distinct (no compile-cache hit) without changing its kernels."""
    return f"// {uuid.uuid4().hex}\n{source}"


def compile_sub(source=GOOD_KERNEL, **extra):
    sub = {"mode": "compile", "source": source}
    sub.update(extra)
    return sub


def problem(resp, status=None):
    """Assert @resp is an RFC 9457 problem (with @status) and return its body."""
    if status is not None:
        assert resp.status_code == status, f"want {status}, got {resp.status_code}: {resp.text[:2000]}"
    ctype = resp.headers.get("content-type", "")
    assert ctype.split(";")[0].strip() == PROBLEM_JSON, f"content-type {ctype!r}: {resp.text[:500]}"
    body = resp.json()
    assert body.get("status") == resp.status_code, body
    assert isinstance(body.get("title"), str) and body["title"], body
    assert isinstance(body.get("type"), str) and body["type"], body
    return body


def accepted(resp):
    """Assert a single-submission 202 and return its id."""
    assert resp.status_code == 202, f"{resp.status_code}: {resp.text[:2000]}"
    body = resp.json()
    assert body["state"] == "queued", body
    assert isinstance(body["id"], int) and body["id"] > 0, body
    assert body["location"] == f"/v1/submissions/{body['id']}", body
    assert resp.headers.get("location", "").endswith(f"/v1/submissions/{body['id']}"), resp.headers
    return body["id"]


def wait_done(client, sid, timeout=60.0):
    """Long-poll until submission @sid is done; return its JSON."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            r = client.get(f"/v1/submissions/{sid}")
            raise AssertionError(f"submission {sid} not done within {timeout}s: {r.text[:2000]}")
        r = client.get(f"/v1/submissions/{sid}", params={"wait": min(10, max(1, int(left)))},
                       timeout=30 * SLOW)
        assert r.status_code == 200, r.text
        body = r.json()
        if body["state"] == "done":
            return body


def list_all(client, **filters):
    """Every submission matching @filters, following the cursor."""
    items = []
    params = dict(filters)
    params.setdefault("limit", 1000)
    for _ in range(10000):
        r = client.get("/v1/submissions", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        items += body["items"]
        if body["next_cursor"] is None:
            return items
        params["cursor"] = body["next_cursor"]
    raise AssertionError("cursor never ended")


_task_cache = {}


def library_task(client):
    """A library task whose reference plan is kernel launches only, as (name, task JSON); or None."""
    if "t" in _task_cache:
        return _task_cache["t"]
    found = []
    r = client.get("/v1/tasks")
    if r.status_code == 200:
        for summ in r.json().get("items", []):
            t = client.get(f"/v1/tasks/{summ['name']}")
            if t.status_code != 200:
                continue
            task = t.json()
            ref = task.get("reference", {})
            if ref.get("source") and all("kernel" in s for s in ref.get("plan", [])):
                found.append((len(ref.get("scratch") or []), summ["name"], task))
    # Prefer a task whose reference needs no scratch buffers.
    found = min(found, key=lambda f: (f[0], f[1]))[1:] if found else None
    _task_cache["t"] = found
    return found


VECADD_TASK = {
    "name": "it_vecadd",
    "title": "Vector add",
    "description": "c = a + b",
    "level": 1,
    "category": "elementwise",
    "params": {"N": "length"},
    "shapes": [{"name": "default", "N": 4096}, {"name": "odd", "N": 1001}],
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

VECADD_SOURCE = ('extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n)'
                 ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }')
VECADD_PLAN = [{"kernel": "vecadd", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}]


def full_sub(client, **extra):
    """A valid full-mode submission (never runs here: no GPU). Library task if any, else inline."""
    lt = library_task(client)
    if lt:
        name, task = lt
        sub = {"task": name, "source": task["reference"]["source"], "plan": task["reference"]["plan"]}
        if task["reference"].get("options"):
            sub["options"] = task["reference"]["options"]
        if task["reference"].get("scratch"):
            sub["scratch"] = task["reference"]["scratch"]
    else:
        sub = {"task_spec": VECADD_TASK, "source": VECADD_SOURCE, "plan": VECADD_PLAN}
    sub["mode"] = "full"
    sub.update(extra)
    return sub


def inline_full_sub(**extra):
    sub = {"task_spec": json.loads(json.dumps(VECADD_TASK)), "source": VECADD_SOURCE,
           "plan": json.loads(json.dumps(VECADD_PLAN)), "mode": "full"}
    sub.update(extra)
    return sub


def read_limits():
    """Every LIMIT_* constant of common/limits.h, evaluated: {name: int}."""
    import re
    out = {}
    text = (SOURCE_ROOT / "common" / "limits.h").read_text()
    for m in re.finditer(r"^#define\s+(LIMIT_\w+)\s+(.+?)\s*(?:/\*.*)?$", text, re.M):
        expr = re.sub(r"(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", m.group(2))
        if not re.fullmatch(r"[\d\s()<>+*-]+", expr):
            continue
        out[m.group(1)] = int(eval(expr, {"__builtins__": {}}))  # digits and operators only
    return out


sys.path.insert(0, str(HERE))
