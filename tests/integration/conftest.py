"""
Integration harness: the real `kevald` binary on port 0 with a real SQLite
file in a temporary folder, compile workers from the build tree, no GPU
(tests/pylib/kevaldserver.py), plus the request builders the tests share.
"""
import json
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pylib"))
from kevaldserver import (BUILD_ROOT, FIXTURE_TASKS, KEVALD, LIBEXEC, PG_STORE, PROJECT_TASKS, SANITIZED, SLOW,  # noqa: E402,F401
                          SOURCE_ROOT, Server, assert_stopped_cleanly, client, make_server,
                          pytest_runtest_makereport, tmp_module)

HERE = Path(__file__).resolve().parent
PROBLEM_JSON = "application/problem+json"


def task_dir():
    """The task library the servers load: the project's, else the test fixtures."""
    if PROJECT_TASKS.is_dir() and any(PROJECT_TASKS.rglob("*.json")):
        return PROJECT_TASKS
    return FIXTURE_TASKS


Server.tasks = task_dir()
Server.tmp_prefix = "kevald-it-"


@pytest.fixture(scope="module")
def server(tmp_module):
    """A default server shared by one test file; must exit 0 on SIGTERM."""
    s = Server(tmp_module / "default").start()
    s.wait_ready()
    yield s
    assert_stopped_cleanly(s)


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


def wait_torch_ready(server, timeout, gpu_workers=None):
    """/readyz of @server once a kevald-torch build worker and every run worker are ready (and GPU 0
    has @gpu_workers kevald-gpu workers ready, where given); fails the test past @timeout (x SLOW)."""
    deadline = time.monotonic() + timeout * SLOW
    body = None
    while time.monotonic() < deadline:
        with server.client() as c:
            body = c.get("/readyz").json()
        t = body.get("torch") or {}
        run = t.get("run") or []
        if ((t.get("build") or {}).get("ready", 0) >= 1 and run and all(w["state"] == "ready" for w in run)
                and (gpu_workers is None
                     or (body.get("gpus") and body["gpus"][0].get("workers_ready") == gpu_workers))):
            return body
        time.sleep(0.05)
    pytest.fail(f"kevald-torch workers not ready: {json.dumps(body)[:3000]}\n{server.log_tail()}")


def nice_of(pid):
    """The nice value of process @pid."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[16])  # field 19 of proc(5): nice


def wait_done(client, sid, timeout=60.0):
    """Long-poll until submission @sid is done; return its JSON."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            r = client.get(f"/v1/submissions/{sid}")
            raise AssertionError(f"submission {sid} not done within {timeout}s: {r.text[:2000]}")
        try:
            r = client.get(f"/v1/submissions/{sid}", params={"wait": min(10, max(1, int(left)))},
                           timeout=30 * SLOW)
        except httpx.RemoteProtocolError as e:
            # A kept-alive connection the server closed as this GET went out (HTTP lets a client
            # retry an idempotent request then); said on stderr, so that a pattern shows in the logs.
            retries = getattr(client, "_kevald_retries", 0) + 1
            client._kevald_retries = retries
            print(f"wait_done: GET /v1/submissions/{sid} on a closed connection ({e}); retry {retries}",
                  file=sys.stderr)
            assert retries <= 3, "the server closed a kept-alive connection under a GET three times"
            continue
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
