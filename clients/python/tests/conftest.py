"""
Harness for the client tests: the real `kevald serve` (port 0, a real SQLite
file, real compile workers, --gpus none) started through the test suites'
shared Server class (tests/pylib/kevaldserver.py), so compile-mode
submissions complete and full-mode ones stay queued. The `kevald` package is imported from clients/python (PYTHONPATH is
set by meson; set here too for runs by hand).
"""
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PKG_ROOT = HERE.parent
SOURCE_ROOT = Path(os.environ.get("KEVALD_SOURCE_ROOT", PKG_ROOT.parent.parent))
os.environ.setdefault("KEVALD_SOURCE_ROOT", str(SOURCE_ROOT))
os.environ.setdefault("KEVALD_BUILD_ROOT", str(SOURCE_ROOT / "build"))
sys.path.insert(0, str(PKG_ROOT))
sys.path.insert(0, str(SOURCE_ROOT / "tests" / "pylib"))
from kevaldserver import (KEVALD, SLOW, Server, assert_stopped_cleanly, make_server,  # noqa: E402,F401
                          pytest_runtest_makereport)

Server.tasks = SOURCE_ROOT / "tasks"
EXAMPLES = SOURCE_ROOT / "clients" / "examples"

GOOD = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = a * x[i] + y[i];
}
'''

BROKEN = r'''
extern "C" __global__ void broken(float *y)
{
        y[0] = undefined_name_xq;
}
'''

RELU = r'''
extern "C" __global__ void relu(const float *x, float *y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''
RELU_PLAN = [{"kernel": "relu", "grid": ["ceil_div(B * D, 256)"], "block": [256], "shared": "0",
              "args": ["x", "y", {"type": "u64", "value": "B * D"}]}]


def unique(src):
    """@src made distinct (no compile-cache hit) without changing its kernels."""
    return f"// {uuid.uuid4().hex}\n{src}"


def run_id():
    return "t-" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="kevald-clients-") as d:
        s = Server(Path(d) / "default").start()
        s.wait_ready()
        yield s
        assert_stopped_cleanly(s)


def token_create(db, name, *extra):
    p = subprocess.run([str(KEVALD), "token", "create", name, "--db", str(db), *extra], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().split()[-1]

