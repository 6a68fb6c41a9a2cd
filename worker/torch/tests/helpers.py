"""
helpers - what the torchworker tests share: where the built worker, its
package and libkevald-confine.so are (KEVALD_BUILD_ROOT/worker, as meson's
test_env says; else the source tree and build/), and a worker started on
pipes.
"""
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(os.environ.get("KEVALD_SOURCE_ROOT", Path(__file__).resolve().parents[3]))
BUILD = Path(os.environ.get("KEVALD_BUILD_ROOT", SRC / "build"))
LIBEXEC = BUILD / "worker"
WORKER = LIBEXEC / "kevald-torch"
CONFINE_LIB = LIBEXEC / "libkevald-confine.so"

# The package from the build tree (what is installed), else from the sources.
sys.path.insert(0, str(LIBEXEC if (LIBEXEC / "kevald_torch").is_dir() else SRC / "worker" / "torch"))
sys.dont_write_bytecode = True

from kevald_torch import frames  # noqa: E402


def _sanitizer_env():
    """In a sanitized build (scripts/dev's ASan tree) libkevald-confine.so needs
    the sanitizer runtimes loaded first in the uninstrumented Python that
    loads it: the environment that preloads them, else {}."""
    try:
        if b"__asan_init" not in CONFINE_LIB.read_bytes():
            return {}
        out = subprocess.run(["ldd", str(CONFINE_LIB)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    libs = [ln.split("=>")[1].split()[0] for ln in out.splitlines()
            if "=>" in ln and ("libasan" in ln or "libubsan" in ln) and ln.split("=>")[1].split()]
    return {"LD_PRELOAD": ":".join(libs), "ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0"} if libs else {}


LIB_ENV = _sanitizer_env()   # for every process that loads the library


def lib_loads(python=None):
    """Whether a Python can load the library here (with LIB_ENV)."""
    env = dict(LIB_ENV, PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    p = subprocess.run([python or sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                        str(CONFINE_LIB)], env=env, capture_output=True, timeout=60)
    return p.returncode == 0


PYTHON = None   # the interpreter start() runs the worker with; None: this one


def _runs_as_nobody(python):
    """Whether @python, run as uid/gid 65534, loads the library (its installation is readable by nobody)."""
    try:
        p = subprocess.run([python, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(CONFINE_LIB)],
                           env=dict(LIB_ENV, PATH="/usr/bin:/bin"), capture_output=True, timeout=60,
                           user=65534, group=65534, extra_groups=[], cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0


def nobody_python():
    """An interpreter for the sandboxed build role: run as root, a build worker drops to uid 65534
    or refuses to start (sandbox/proc.c), so its Python must be readable by nobody (a pyenv under
    /root is not). Not root: this one. None where none is found."""
    if os.geteuid() != 0:
        return sys.executable
    for py in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(py) and _runs_as_nobody(py):
            return py
    return None


def have_module(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def have_torch():
    return have_module("torch")


def start(role, env_extra=None, args=()):
    """kevald-torch --role @role on pipes, with the supervisor's environment."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KEVALD_PARENT_PID": str(os.getpid()),
           "KEVALD_LOG_LEVEL": "info", "KEVALD_CONFINE_LIB": str(CONFINE_LIB)}
    env.update(LIB_ENV)
    if env_extra:
        env.update(env_extra)
    env = {k: v for k, v in env.items() if v is not None}
    return subprocess.Popen([PYTHON or sys.executable, str(WORKER), "--role", role, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def read_frame(proc):
    """The next frame of @proc's stdout as (type, object, blob), or None."""
    fr = frames.read(proc.stdout.fileno())
    if fr is None:
        return None
    import json
    t, body, blob = fr
    return t, json.loads(body) if body else None, blob


def finish(proc, timeout=20):
    """Close stdin; return (exit status, stderr text)."""
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    rc = proc.wait(timeout=timeout)
    err = proc.stderr.read().decode(errors="replace")
    proc.stdout.close()
    proc.stderr.close()
    return rc, err
