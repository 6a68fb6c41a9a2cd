"""
The real `kevald serve` as a test fixture, shared by the integration and the
hostile suites (each conftest imports this module and sets its own defaults).

A Server runs `kevald serve --listen 127.0.0.1:0 --db DIR/k.db --port-file
DIR/port --gpus none` from the build tree, waits for the port file, and stops
with SIGTERM; the fixtures assert that it exits 0 (the graceful-shutdown
contract). Its stdout and stderr go to DIR/server.log, shown when a test fails.

KEVALD_BUILD_ROOT (the meson build dir) and KEVALD_SOURCE_ROOT come from the
meson test environment; run by hand, they default to ./build and the checkout.

With KEVALD_IT_STORE=pg (the `*-pg` integration tests, run under
scripts/pg-temp, which sets KEVALD_TEST_PG) every server's store is a fresh
PostgreSQL database instead of a SQLite file: Server.db is then its URI, the
same one for the same db path, so a restarted server finds its data.
"""
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

SOURCE_ROOT = Path(os.environ.get("KEVALD_SOURCE_ROOT", Path(__file__).resolve().parents[2]))
BUILD_ROOT = Path(os.environ.get("KEVALD_BUILD_ROOT", SOURCE_ROOT / "build"))
KEVALD = BUILD_ROOT / "server" / "kevald"
LIBEXEC = BUILD_ROOT / "worker"
SANITIZED = bool(os.environ.get("ASAN_OPTIONS") or os.environ.get("UBSAN_OPTIONS"))
# Sanitized builds are several times slower; scale waits with this.
SLOW = 4.0 if SANITIZED else 1.0

PG_BASE = os.environ.get("KEVALD_TEST_PG") if os.environ.get("KEVALD_IT_STORE") == "pg" else None
PG_STORE = PG_BASE is not None
_pg_dbs = {}


def psql(uri, sql):
    """Run one SQL statement with the psql of the test cluster."""
    bin_dir = os.environ.get("KEVALD_TEST_PG_BIN")
    exe = str(Path(bin_dir) / "psql") if bin_dir else "psql"
    subprocess.run([exe, "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", uri, "-c", sql], check=True,
                   capture_output=True, timeout=60)


def pg_database_for(path):
    """The PostgreSQL URI standing in for the SQLite file @path: a fresh database, one per path."""
    key = str(path)
    if key not in _pg_dbs:
        name = f"it_{os.getpid()}_{len(_pg_dbs)}"
        psql(PG_BASE, f"CREATE DATABASE {name}")
        _pg_dbs[key] = PG_BASE.rsplit("/", 1)[0] + "/" + name
    return _pg_dbs[key]


PROJECT_TASKS = SOURCE_ROOT / "tasks"
FIXTURE_TASKS = SOURCE_ROOT / "tests" / "fixtures" / "tasks"


class Server:
    """One `kevald serve` process. Not thread-safe; tests drive it from one thread.

    The class attributes are the suite's defaults (a conftest sets them):
    the task library, extra environment, the HTTP client timeout and the
    temporary folder prefix.
    """

    tasks = PROJECT_TASKS
    env_extra = {}
    client_timeout = 30.0
    tmp_prefix = "kevald-test-"

    def __init__(self, workdir, args=(), db=None, env=None):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else self.dir / "k.db"
        if PG_STORE:
            self.db = pg_database_for(self.db)
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
            argv += ["--tasks", str(self.tasks)]
        if not any(a.startswith("--libexec") for a in self.args) and LIBEXEC.is_dir():
            argv += ["--libexec", str(LIBEXEC)]
        if not any(a.startswith("--compile-workers") for a in self.args):
            argv += ["--compile-workers", "1"]
        argv += self.args
        env = dict(os.environ)
        env.update(self.env_extra)
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

    def readyz(self):
        return httpx.get(self.url + "/readyz", timeout=5)

    def wait_ready(self, timeout=30.0):
        """Wait until /readyz says ready (a compile worker said HELLO); its JSON."""
        deadline = time.monotonic() + timeout * SLOW
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.readyz()
                if last.status_code == 200:
                    return last.json()
            except httpx.HTTPError as e:
                last = e
            time.sleep(0.05)
        pytest.fail(f"not ready within {timeout}s: {last!r} {getattr(last, 'text', '')}\n{self.log_tail()}")

    def stop(self, sig=signal.SIGTERM, timeout=60.0):
        """Signal the server and wait; its exit status, "timeout", or None if not running."""
        if self.proc is None:
            return None
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "timeout"
        if rc is None:
            rc = self.proc.returncode
        self.proc = None
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def client(self, **kw):
        kw.setdefault("timeout", self.client_timeout * SLOW)
        return httpx.Client(base_url=self.url, **kw)

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n=60):
        return "\n".join(self.log_text().splitlines()[-n:]) or "(no log)"

    def kevald(self, *args, check=True):
        """Run another kevald subcommand (e.g. against this server's db)."""
        p = subprocess.run([str(KEVALD), *args], capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"kevald {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p

    def worker_pids(self, name="kevald-compile"):
        """PIDs of this server's live child processes named @name."""
        pids = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            if comm == name[:15] and fields[0] != "Z" and int(fields[1]) == self.proc.pid:
                pids.append(int(p.name))
        return pids


def assert_stopped_cleanly(s, allow_not_running=False):
    rc = s.stop()
    ok = (0, None) if allow_not_running else (0,)
    assert rc in ok, f"kevald exited {rc} on SIGTERM:\n{s.log_tail()}"


# ---- fixtures (a conftest imports them by name) -----------------------------

@pytest.fixture(scope="module")
def tmp_module():
    with tempfile.TemporaryDirectory(prefix=Server.tmp_prefix) as d:
        yield Path(d)


@pytest.fixture
def make_server(tmp_path):
    """Factory: make_server(args...) starts a dedicated server, stopped (and asserted 0) at teardown."""
    started = []

    def make(*args, db=None, ready=True, name=None, env=None):
        s = Server(tmp_path / (name or f"s{len(started)}"), args, db=db, env=env).start()
        started.append(s)
        if ready:
            s.wait_ready()
        return s

    yield make
    for s in started:
        assert_stopped_cleanly(s, allow_not_running=True)


@pytest.fixture(scope="module")
def client(server):
    with server.client() as c:
        yield c


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test shows the log of the server it used."""
    out = yield
    rep = out.get_result()
    if rep.failed:
        s = getattr(item, "funcargs", {}).get("server")
        if isinstance(s, Server):
            rep.sections.append(("kevald log", s.log_tail(80)))
