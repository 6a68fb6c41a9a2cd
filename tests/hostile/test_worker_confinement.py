"""
The confinement of the real compile workers, seen from outside (/proc), not
from their own report: identity, capabilities, no_new_privs, seccomp mode,
network namespace, working directory, open descriptors, limits and the
scrubbed environment of a worker started by `kevald serve`. Reading another
uid's /proc entries needs root; cases that cannot look are skipped.
"""
import os
from pathlib import Path

import pytest

from conftest import SECRET_ENV, assert_serves_normally

ALLOWED_ENV = {"PATH", "KEVALD_CUDA_HOME", "KEVALD_GPU_INDEX", "KEVALD_PARENT_PID",
               "LD_LIBRARY_PATH", "KEVALD_LOG_LEVEL"}


def status(pid):
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


@pytest.fixture(scope="module")
def worker(server):
    pids = server.worker_pids()
    assert len(pids) == 1, pids
    return pids[0]


def test_worker_process_attributes(server, worker):
    st = status(worker)
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"                      # filter mode
    assert int(st.get("Seccomp_filters", "1")) >= 1
    assert int(st["CapEff"], 16) == 0 and int(st["CapPrm"], 16) == 0
    if os.geteuid() == 0:
        assert st["Uid"].split() == ["65534"] * 4
        assert st["Gid"].split() == ["65534"] * 4
        assert st["Groups"] == ""
    assert int(st["Threads"]) >= 1
    assert_serves_normally(server)


def test_worker_namespaces_cwd_fds_limits(server, worker):
    if os.geteuid() != 0:
        pytest.skip("reading a non-dumpable worker's /proc entries needs root")
    sup = server.proc.pid
    assert os.readlink(f"/proc/{worker}/ns/net") != os.readlink(f"/proc/{sup}/ns/net")
    assert os.readlink(f"/proc/{worker}/cwd") == f"/tmp/kevald-empty-{os.geteuid()}"
    assert os.listdir(f"/proc/{worker}/cwd") == []
    fds = sorted(int(f) for f in os.listdir(f"/proc/{worker}/fd"))
    assert fds == [0, 1, 2], fds                      # only the frame pipes and stderr
    limits = Path(f"/proc/{worker}/limits").read_text()
    row = {l[:26].strip(): l[26:].split() for l in limits.splitlines()[1:]}
    assert row["Max core file size"][:2] == ["0", "0"]
    assert row["Max open files"][:2] == ["256", "256"]
    assert row["Max cpu time"][1] == "21600"
    assert row["Max file size"][:2] == ["1073741824", "1073741824"]
    assert_serves_normally(server)


def test_worker_environment_is_scrubbed(server, worker):
    if os.geteuid() != 0:
        pytest.skip("reading a non-dumpable worker's environ needs root")
    env = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    keys = {e.split(b"=", 1)[0].decode() for e in env if e}
    assert SECRET_ENV[0] not in keys
    assert SECRET_ENV[1].encode() not in b"\0".join(env)
    assert keys <= ALLOWED_ENV, keys - ALLOWED_ENV
    assert f"KEVALD_PARENT_PID={server.proc.pid}".encode() in env
