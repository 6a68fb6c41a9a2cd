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


PYTHON = None   # the interpreter start() runs the worker with; None: this one


def have_torch():
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def start(role, env_extra=None, args=()):
    """kevald-torch --role @role on pipes, with the supervisor's environment."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KEVALD_PARENT_PID": str(os.getpid()),
           "KEVALD_LOG_LEVEL": "info", "KEVALD_CONFINE_LIB": str(CONFINE_LIB)}
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
