"""
The client subcommands of the `kevald` binary against the real server:
summaries, --json, exit codes, waits, task and history listings; and the
C HTTP client's framing (Content-Length, chunked, end of connection)
against a scripted server.
"""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

import kevald
from conftest import BROKEN, GOOD, KEVALD, RELU, RELU_PLAN, SLOW, run_id, token_create, unique

EX_USAGE, EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL = 64, 69, 70, 75


def kv(server_url, *args, timeout=120, env=None, token=None):
    e = dict(os.environ)
    e.pop("KEVALD_URL", None)
    e.pop("KEVALD_TOKEN", None)
    if env:
        e.update(env)
    argv = [str(KEVALD), *args]
    if server_url:
        argv += ["--server", server_url]
    if token:
        argv += ["--token", token]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout * SLOW, env=e)


@pytest.fixture
def src(tmp_path):
    def make(text, name="k.cu"):
        p = tmp_path / name
        p.write_text(unique(text))
        return str(p)
    return make


def test_submit_compile_wait_summary_and_exit(server, src):
    p = kv(server.url, "submit", src(GOOD), "--wait")
    assert p.returncode == 0, p.stderr
    assert "compiled" in p.stdout and "saxpy (" in p.stdout and "registers" in p.stdout
    p = kv(server.url, "submit", src(BROKEN), "--wait=60")
    assert p.returncode == 2, p.stderr
    assert "compile: FAILED" in p.stdout and 'identifier "undefined_name_xq" is undefined' in p.stdout
    assert "feedback: Compilation failed" in p.stdout


def test_submit_json_and_status(server, src):
    p = kv(server.url, "submit", src(GOOD), "--mode", "compile", "--option=-use_fast_math", "--option",
           "-DFOO=1", "--wait", "--json")
    assert p.returncode == 0, p.stderr
    sub = json.loads(p.stdout)
    assert sub["state"] == "done" and sub["verdict"] == "compiled" and sub["mode"] == "compile"
    assert sub["result"]["compile"]["kernels"][0]["name"] == "saxpy"
    s = kv(server.url, "status", str(sub["id"]), "--json")
    assert s.returncode == 0 and json.loads(s.stdout)["id"] == sub["id"]
    w = kv(server.url, "wait", str(sub["id"]))
    assert w.returncode == 0 and f"submission {sub['id']}: compiled" in w.stdout


def test_submit_without_wait_then_wait(server, src):
    p = kv(server.url, "submit", src(BROKEN))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("submitted ")
    sid = int(p.stdout.split()[1])
    w = kv(server.url, "wait", str(sid), "--timeout", "60")
    assert w.returncode == 2 and f"submission {sid}: compile_error" in w.stdout


def test_full_mode_pending_and_cancel(server, src):
    # No GPU: a full-mode submission stays pending; --wait=S then exits 75.
    t0 = time.monotonic()
    p = kv(server.url, "submit", src(RELU), "--task", "l1_19_relu", "--wait=2")
    assert p.returncode == EX_TEMPFAIL, (p.stdout, p.stderr)
    assert 1.9 <= time.monotonic() - t0 < 30 * SLOW
    assert "example plan of task 'l1_19_relu'" in p.stderr and "not done yet" in p.stdout
    sid = int(p.stdout.split()[1].rstrip(":"))
    # Its compiles (candidate, fenced build, reference) may outlast the 2 s wait on a loaded host.
    deadline = time.monotonic() + 60 * SLOW
    while True:
        s = kv(server.url, "status", str(sid))
        if "compiling" not in s.stdout and "queued" not in s.stdout or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert s.returncode == EX_TEMPFAIL and f"submission {sid}: compiled (not done yet)" in s.stdout, s.stdout
    t0 = time.monotonic()
    w = kv(server.url, "wait", str(sid), "--timeout", "1.5")
    assert w.returncode == EX_TEMPFAIL and time.monotonic() - t0 >= 1.4
    # Compiled and waiting for a GPU that this host has not: it can be cancelled (exit 6); once done, 409.
    c = kv(server.url, "cancel", str(sid))
    assert c.returncode == 6 and "cancelled" in c.stdout, (c.stdout, c.stderr)
    c = kv(server.url, "cancel", str(sid))
    assert c.returncode == EX_SOFTWARE
    assert "409" in c.stderr and "only queued or compiled (waiting for a GPU) submissions can be cancelled" in c.stderr
    # A queued one (behind a batch of compiles) can be cancelled: exit 6.
    with kevald.Client(server.url) as cl:
        ids = cl.submit_batch([{"source": unique(RELU), "task": "l1_19_relu", "plan": RELU_PLAN}
                               for _ in range(20)])
    c = kv(server.url, "cancel", str(ids[-1]))
    assert c.returncode == 6 and "cancelled" in c.stdout, (c.stdout, c.stderr)


def test_compile_mode_with_a_task_checks_the_plan(server, src):
    # No --plan: the task's example plan, in compile mode too, so a kernel the plan cannot launch is rejected.
    p = kv(server.url, "submit", src(RELU), "--task", "l1_19_relu", "--mode", "compile", "--wait=60")
    assert p.returncode == 0 and "compiled" in p.stdout, (p.stdout, p.stderr)
    assert "example plan of task 'l1_19_relu'" in p.stderr
    p = kv(server.url, "submit", src(RELU.replace('extern "C" ', "")), "--task", "l1_19_relu", "--mode", "compile",
           "--wait=60")
    assert p.returncode == 5 and "rejected" in p.stdout and "extern" in p.stdout, (p.stdout, p.stderr)


def test_plan_file_and_server_errors(server, src, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"kernel": "saxpy", "grid": ["ceil_div(B * D, 256)"], "block": [256],
                                 "args": ["x", "y", {"type": "u64", "value": "B * D"}]}]))
    # saxpy takes 4 parameters; the plan passes 3: the check after compiling says rejected (exit 5).
    p = kv(server.url, "submit", src(GOOD), "--task", "l1_19_relu", "--plan", str(plan), "--wait=60")
    assert p.returncode == 5, (p.stdout, p.stderr)
    assert "rejected" in p.stdout and "argument" in p.stdout
    # A 422 from the server: exit 70 with the problem detail and pointer.
    p = kv(server.url, "submit", src(GOOD), "--task", "no_such_task_q")
    assert p.returncode == EX_SOFTWARE
    assert "404" in p.stderr or "422" in p.stderr
    # A candidate whose own content is wrong (an option not allowed) is a verdict, known at once: exit 5.
    p = kv(server.url, "submit", src(GOOD), "--task", "l1_19_relu", "--plan", str(plan), "--option", "-I/etc")
    assert p.returncode == 5 and "rejected" in p.stdout and "/options/0" in p.stdout, (p.stdout, p.stderr)
    assert kv(server.url, "status", "987654321").returncode == EX_SOFTWARE


def test_usage_and_unreachable(server, src, tmp_path):
    assert kv(server.url, "submit").returncode == EX_USAGE
    assert kv(server.url, "submit", str(tmp_path / "missing.cu")).returncode == EX_USAGE
    assert kv(server.url, "submit", src(GOOD), "--mode", "fast").returncode == EX_USAGE
    assert kv(server.url, "submit", src(GOOD), "--mode", "full").returncode == EX_USAGE
    assert kv(server.url, "status", "abc").returncode == EX_USAGE
    assert kv(server.url, "history", "--limit", "0").returncode == EX_USAGE
    assert kv("https://127.0.0.1:1", "tasks").returncode == EX_USAGE
    p = kv("http://127.0.0.1:9", "submit", src(GOOD))
    assert p.returncode == EX_UNAVAILABLE and "cannot reach the server" in p.stderr
    h = kv(None, "submit", "--help")
    assert h.returncode == 0
    for code in ("0 correct or compiled", "1 incorrect", "2 compile_error", "3 runtime_error", "4 timeout",
                 "5 rejected", "6 internal_error", "64 usage", "69 server unreachable", "70 server error",
                 "75 still pending"):
        assert code in h.stdout, code
    # KEVALD_URL is read when --server is absent.
    p = kv(None, "tasks", env={"KEVALD_URL": server.url})
    assert p.returncode == 0 and "l1_19_relu" in p.stdout


def test_tasks_and_history(server, src):
    p = kv(server.url, "tasks", "--category", "activation")
    assert p.returncode == 0 and "l1_19_relu" in p.stdout and "softmax" not in p.stdout
    p = kv(server.url, "tasks", "--level", "1", "--json")
    items = json.loads(p.stdout)
    assert items and all(t["level"] == 1 for t in items)
    p = kv(server.url, "tasks", "show", "l1_19_relu")
    assert p.returncode == 0 and json.loads(p.stdout)["name"] == "l1_19_relu"
    p = kv(server.url, "tasks", "prompt", "l1_19_relu")
    assert p.returncode == 0 and "relu" in p.stdout.lower()
    assert kv(server.url, "tasks", "show", "nope_task").returncode == EX_SOFTWARE
    rid = run_id()
    ids = []
    for text in (GOOD, BROKEN, GOOD):
        p = kv(server.url, "submit", src(text), "--run-id", rid, "--wait", "--json")
        ids.append(json.loads(p.stdout)["id"])
    p = kv(server.url, "history", "--run-id", rid, "--json")
    assert [x["id"] for x in json.loads(p.stdout)] == ids[::-1]
    p = kv(server.url, "history", "--run-id", rid, "--verdict", "compile_error", "--json")
    assert [x["id"] for x in json.loads(p.stdout)] == [ids[1]]
    p = kv(server.url, "history", "--run-id", rid, "--limit", "2")
    lines = p.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "CREATED", "STATE"] and len(lines) == 3
    assert lines[1].split()[0] == str(ids[2])


def test_token_and_rate_limit_retry(make_server, src, tmp_path):
    db = tmp_path / "auth.db"
    s = make_server("--auth", "on", "--auth-cache-s", "0", db=db)
    tok = token_create(db, "cli", "--rate", "1", "--burst", "1")
    p = kv(s.url, "tasks")
    assert p.returncode == EX_SOFTWARE and "401" in p.stderr
    # Rate 1/s, burst 1: the second call in the same second gets a 429 and is retried.
    rid = run_id()
    errs = []
    for _ in range(3):
        p = kv(s.url, "submit", src(GOOD), "--run-id", rid, token=tok)
        assert p.returncode == 0, p.stderr
        errs.append(p.stderr)
    assert any("server answered 429; retrying" in e for e in errs), errs
    p = kv(s.url, "history", "--run-id", rid, "--json", env={"KEVALD_TOKEN": tok})
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)) == 3          # retried POSTs stored once each


# ---- framing of the C client against a scripted server ----

class Scripted:
    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data.decode("latin-1"))
            for part in self.answer:
                conn.sendall(part)
                time.sleep(0.05)
            if getattr(self, "stall", False):
                time.sleep(3)       # hold the connection open past the client's deadline
            conn.close()

    def close(self):
        self.sock.close()


SUB = json.dumps({"id": 7, "state": "done", "verdict": "incorrect", "task": "t", "mode": "full",
                  "result": {"verdict": "incorrect", "feedback": "wrong at [3]"}}).encode()


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_http_framing(framing):
    if framing == "length":
        ans = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(SUB),
               SUB[:10], SUB[10:] + b"GARBAGE-AFTER-BODY"]
    elif framing == "chunked":
        ans = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
               b"%x;ext=1\r\n%s\r\n" % (10, SUB[:10]), b"%X\r\n%s\r\n0\r\n" % (len(SUB) - 10, SUB[10:]),
               b"Trailer: x\r\n\r\n"]
    else:
        ans = [b"HTTP/1.0 200 OK\r\n\r\n", SUB]
    srv = Scripted(ans)
    try:
        p = kv(srv.url + "/prefix/", "status", "7", "--json", token="tok123")
        assert p.returncode == 1, (p.stdout, p.stderr)   # incorrect
        assert json.loads(p.stdout)["id"] == 7
        req = srv.requests[0]
        assert req.startswith("GET /prefix/v1/submissions/7 HTTP/1.1\r\n")
        assert "Authorization: Bearer tok123\r\n" in req and "Connection: close\r\n" in req
    finally:
        srv.close()


@pytest.mark.parametrize("answer,code", [
    ([b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"id\":"], EX_SOFTWARE),      # body cut short
    ([b"SSH-2.0-OpenSSH\r\n\r\n"], EX_SOFTWARE),                                      # not HTTP
    ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], EX_SOFTWARE),  # bad chunk
    ([b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n"], EX_SOFTWARE),      # over the limit
    ([], EX_UNAVAILABLE),                                                             # closed at once
])
def test_http_bad_answers(answer, code):
    srv = Scripted(answer)
    try:
        p = kv(srv.url, "status", "7", timeout=60)
        assert p.returncode == code, (p.stdout, p.stderr)
        assert "kevald status:" in p.stderr
    finally:
        srv.close()


@pytest.mark.parametrize("answer", [
    [],                                                                  # accepts, says nothing
    [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\""],           # stalls inside the body
])
def test_http_timeout(answer):
    srv = Scripted(answer)
    srv.stall = True
    try:
        t0 = time.monotonic()
        p = kv(srv.url, "status", "7", env={"KEVALD_HTTP_TIMEOUT": "0.7"}, timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == EX_UNAVAILABLE, (p.stdout, p.stderr)
        assert "timed out" in p.stderr
        assert 0.6 <= took < 5 * SLOW
    finally:
        srv.close()
    assert kv("http://127.0.0.1:9", "tasks", env={"KEVALD_HTTP_TIMEOUT": "0"}).returncode == EX_USAGE


FULL_RESULTS = {
    "incorrect": ({"verdict": "incorrect", "compile": {"ok": True, "compile_ms": 12.5, "kernels": [
                       {"name": "relu", "registers": 10, "shared_static": 0, "local": 0}]},
                   "correctness": {"passed": False, "shapes": [
                       {"shape": "default", "passed": True, "trials": 2},
                       {"shape": "tiny", "passed": False, "trials": 1, "buffers": [
                           {"name": "y", "mismatches": 0, "nan_inf_mismatches": 1, "count": 99, "max_abs": None,
                            "first_mismatches": [{"index": 98, "got": "nan", "want": 0.75}]}]}]},
                   "error": {"kind": "mismatch", "shape": "tiny", "message": "1 NaN/Inf disagreement"},
                   "feedback": "Wrong on shape tiny."}, 1,
                  ["correctness: FAILED", "default    passed (2 trials)",
                   "tiny       FAILED (1 trials); y: 1 of 99 wrong (1 NaN/Inf, max abs null), first [98] got nan want 0.75",
                   "error: mismatch: 1 NaN/Inf disagreement (shape tiny)", "feedback: Wrong on shape tiny."]),
    "correct": ({"verdict": "correct", "reward_fields": {"compiled": True, "correct": True, "speedup": 1.83},
                 "correctness": {"passed": True, "shapes": [{"shape": "default", "passed": True, "trials": 3}]},
                 "timing": {"speedup": 1.83, "shapes": [{"shape": "default", "speedup": 1.83,
                            "candidate": {"median_ms": 0.0123}, "reference": {"median_ms": 0.0225},
                            "roofline": {"suspicious": False}}]},
                 "feedback": "Correct; 1.83x."}, 0,
                ["correctness: passed", "timing: 1.83x the reference's speed",
                 "default    0.0123 ms vs 0.0225 ms reference (1.83x)"]),
    "runtime_error": ({"verdict": "runtime_error", "error": {"kind": "cuda", "name": "CUDA_ERROR_ILLEGAL_ADDRESS",
                       "message": "an illegal memory access", "shape": "default", "phase": "correctness",
                       "trial": 0, "launch": 0, "kernel": "relu"}}, 3,
                      ["error: cuda CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access (shape default, "
                       "phase correctness, trial 0, launch 0, kernel relu)"]),
}


@pytest.mark.parametrize("verdict", sorted(FULL_RESULTS))
def test_summary_of_full_results(verdict):
    result, code, lines = FULL_RESULTS[verdict]
    body = json.dumps({"id": 11, "state": "done", "verdict": verdict, "task": "l1_19_relu", "mode": "full",
                       "speedup": result.get("reward_fields", {}).get("speedup"), "result": result}).encode()
    srv = Scripted([b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body),
                    body])
    try:
        p = kv(srv.url, "status", "11")
        assert p.returncode == code, (p.stdout, p.stderr)
        assert p.stdout.startswith(f"submission 11: {verdict}  [task l1_19_relu, mode full")
        for line in lines:
            assert line in p.stdout, (line, p.stdout)
    finally:
        srv.close()


def test_wait_spinner_on_a_terminal(server, src):
    """On a terminal, a long wait shows a spinner line with the state and elapsed time on stderr."""
    import pty
    p = kv(server.url, "submit", src(RELU), "--task", "l1_19_relu")
    sid = int(p.stdout.split()[1])
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([str(KEVALD), "wait", str(sid), "--timeout", "3", "--server", server.url],
                                stdout=subprocess.PIPE, stderr=slave, text=True)
        out, _ = proc.communicate(timeout=60 * SLOW)
        os.close(slave)
        slave = None
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert proc.returncode == EX_TEMPFAIL
    text = seen.decode(errors="replace")
    assert any(f"waiting for submission {sid}: {state}" in text for state in ("queued", "compiling", "compiled")), text
    assert "\r" in text and " s\x1b[K" in text
    assert "not done yet" in out
