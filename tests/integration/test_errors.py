"""
Every error class of POST /v1/submissions answers RFC 9457 problem+json with
the right status and, for a field, the exact JSON pointer: the envelope
(JSON, task, tags, mode, timing, unknown fields, the body). A fault inside
the candidate's own content (source, plan, scratch, options, name
expressions) is not an HTTP error but a stored verdict, `rejected`, with the
same message and pointer (rejected()).
"""
import json
import socket
import time

import pytest

from conftest import (SANITIZED, SLOW, compile_sub, full_sub, inline_full_sub, problem, read_limits,
                      GOOD_KERNEL)

LIMITS = read_limits()


def post(client, body, **kw):
    return client.post("/v1/submissions", json=body, **kw)


def rejected(client, r, pointer):
    """@r accepted a candidate that was rejected at acceptance: a done row with the pointer; its result."""
    assert r.status_code == 202, r.text[:500]
    ans = r.json()
    assert ans["state"] == "done" and ans["verdict"] == "rejected", ans
    sub = client.get(f"/v1/submissions/{ans['id']}").json()
    assert sub["state"] == "done" and sub["verdict"] == "rejected", sub
    res = sub["result"]
    assert res["verdict"] == "rejected" and res["error"]["kind"] == "submission", res
    assert res["error"]["pointer"] == pointer, (pointer, res["error"])
    assert res["feedback"].startswith("Rejected: ") and res["error"]["message"] in res["feedback"], res
    assert res["reward_fields"] == {"compiled": False, "correct": False, "speedup": None, "speedup_vs": None,
                                    "roofline_fraction": None, "suspicious": False}
    return res

def test_malformed_json(client):
    for raw in (b"{", b"{\"mode\": }", b"not json", b"\xff\xfe{}", b"", b'{"mode": "compile", "mode": "compile"}'):
        r = client.post("/v1/submissions", content=raw, headers={"content-type": "application/json"})
        problem(r, 400)


def test_not_an_object(client):
    for raw in (b"[]", b"42", b"\"x\"", b"null"):
        r = client.post("/v1/submissions", content=raw, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), r.text
        problem(r)


def test_too_deep(client):
    raw = ("[" * (LIMITS["LIMIT_JSON_DEPTH"] + 10) + "]" * (LIMITS["LIMIT_JSON_DEPTH"] + 10)).encode()
    body = {"mode": "compile", "source": "x", "tags": {"labels": {}}}
    r = client.post("/v1/submissions", content=raw, headers={"content-type": "application/json"})
    problem(r, 422)
    assert post(client, body).status_code == 202


def test_wrong_content_type(client):
    r = client.post("/v1/submissions", content=b'{"mode": "compile", "source": "x"}',
                    headers={"content-type": "text/plain"})
    problem(r, 415)


def test_unknown_field(client):
    body = problem(post(client, compile_sub(bogus=1)), 422)
    assert body["pointer"] == "/bogus", body
    assert "bogus" in body["detail"]
    body = problem(post(client, compile_sub(tags={"run_id": "r", "colour": "x"})), 422)
    assert body["pointer"] == "/tags/colour", body


def test_wrong_types(client):
    for sub, pointer in [(compile_sub(source=42), "/source"), (compile_sub(options="-O3"), "/options"),
                         (compile_sub(options=[3]), "/options/0")]:
        res = rejected(client, post(client, sub), pointer)
        assert "must be" in res["error"]["message"], res
    cases = [
        (compile_sub(mode="fast"), "/mode"),
        (compile_sub(language="fortran"), "/language"),
        (compile_sub(tags={"step": "three"}), "/tags/step"),
        (compile_sub(tags={"step": -1}), "/tags/step"),
        (compile_sub(tags={"labels": {"k": True}}), "/tags/labels/k"),
        (compile_sub(tags={"temperature": -1}), "/tags/temperature"),
        (compile_sub(priority="urgent"), "/priority"),
    ]
    for sub, pointer in cases:
        body = problem(post(client, sub), 422)
        assert body["pointer"] == pointer, (sub, body)


def test_missing_source(client):
    res = rejected(client, post(client, {"mode": "compile"}), "/source")
    assert res["error"]["message"] == "missing required field 'source'", res


def test_source_too_large(client):
    n = LIMITS["LIMIT_SOURCE_BYTES"]
    big = "// " + "x" * (n - 3 - len(GOOD_KERNEL) - 1) + "\n" + GOOD_KERNEL
    assert len(big.encode()) == n
    r = post(client, compile_sub(big))
    assert r.status_code == 202, "exactly LIMIT_SOURCE_BYTES is allowed: " + r.text[:300]
    r = post(client, compile_sub(big + " "))
    res = rejected(client, r, "/source")
    assert str(n + 1) in res["error"]["message"], res


def test_option_limits(client):
    n = LIMITS["LIMIT_OPTIONS_MAX"]
    ok = compile_sub(options=["-DX%d=1" % i for i in range(n)])
    assert post(client, ok).status_code == 202
    rejected(client, post(client, compile_sub(options=["-DX%d=1" % i for i in range(n + 1)])), "/options")
    long_opt = "-DX=" + "1" * LIMITS["LIMIT_OPTION_BYTES"]
    rejected(client, post(client, compile_sub(options=["-O3", long_opt])), "/options/1")


@pytest.mark.parametrize("opt", ["-I/etc", "-I", "--include-path=/etc", "-include", "/etc/passwd",
                                 "-rdc=true", "--relocatable-device-code=true", "-o", "--output-dir=/tmp",
                                 "-dlto", "--pre-include=/etc/passwd", "-isystem/etc"])
def test_forbidden_option(client, opt):
    rejected(client, post(client, compile_sub(options=[opt])), "/options/0")


def test_allowed_options(client):
    r = post(client, compile_sub(options=["-use_fast_math", "-O3", "-std=c++17", "-DN=4", "-lineinfo"]))
    assert r.status_code == 202, r.text


def test_tags_limits(client):
    n = LIMITS["LIMIT_TAGS_MAX"]
    labels = {f"k{i}": "v" for i in range(n + 1)}
    body = problem(post(client, compile_sub(tags={"labels": labels})), 422)
    assert body["pointer"] == "/tags/labels", body
    s = LIMITS["LIMIT_TAG_STRING_BYTES"]
    body = problem(post(client, compile_sub(tags={"run_id": "r" * (s + 1)})), 422)
    assert body["pointer"] == "/tags/run_id", body
    assert post(client, compile_sub(tags={"run_id": "r" * s})).status_code == 202


def test_unknown_task(client):
    body = problem(post(client, full_sub(client, task="no_such_task_q")), 422)
    assert body["pointer"] == "/task", body
    assert "no_such_task_q" in body["detail"]


def test_task_and_task_spec_exclusive(client):
    sub = inline_full_sub()
    sub["task"] = "anything"
    body = problem(post(client, sub), 422)
    assert body["pointer"] in ("/task", "/task_spec", ""), body
    sub = inline_full_sub()
    del sub["task_spec"]
    body = problem(post(client, sub), 422)
    assert body["pointer"] in ("/task", ""), body


def test_plan_errors(client):
    def bad(edit, pointer):
        sub = inline_full_sub()
        edit(sub)
        return rejected(client, post(client, sub), pointer)

    bad(lambda s: s["plan"][0]["args"].__setitem__(1, "no_such_buffer"), "/plan/0/args/1")
    bad(lambda s: s["plan"][0].__setitem__("grid", ["ceil_div(N, "]), "/plan/0/grid/0")
    res = bad(lambda s: s["plan"][0].__setitem__("grid", ["Q * 2"]), "/plan/0/grid/0")
    assert "Q" in res["error"]["message"]
    bad(lambda s: s["plan"][0].__setitem__("block", [1, 1, 1, 1]), "/plan/0/block")
    bad(lambda s: s.__setitem__("plan", [dict(s["plan"][0]) for _ in range(LIMITS["LIMIT_LAUNCHES_MAX"] + 1)]),
        "/plan")
    bad(lambda s: s["plan"][0]["args"].__setitem__(3, {"type": "i33", "value": "N"}), "/plan/0/args/3/type")
    bad(lambda s: s["plan"][0].__setitem__("colour", 1), "/plan/0/colour")
    bad(lambda s: s.__setitem__("plan", []), "/plan")
    bad(lambda s: s.__delitem__("plan"), "/plan")

    # The task is the envelope: a bad task_spec still refuses the request.
    sub = inline_full_sub()
    sub["task_spec"]["buffers"][0]["dtype"] = "f12"
    body = problem(post(client, sub), 422)
    assert body["pointer"] == "/task_spec/buffers/0/dtype", body

    # In a batch every item is stored; the answer lists every id and which were rejected.
    good = inline_full_sub()
    badsub = inline_full_sub()
    badsub["plan"][0]["args"][1] = "nope"
    r = post(client, {"submissions": [good, badsub, good]})
    assert r.status_code == 202, r.text
    ans = r.json()
    assert ans["count"] == 3 and len(ans["ids"]) == 3 and ans["rejected"] == [1], ans
    subs = [client.get(f"/v1/submissions/{i}").json() for i in ans["ids"]]
    assert subs[1]["verdict"] == "rejected" and subs[1]["result"]["error"]["pointer"] == "/plan/0/args/1"
    assert subs[0]["state"] != "done" or subs[0]["verdict"] != "rejected"
    # An envelope fault in any item still refuses the whole batch, naming the item.
    envbad = inline_full_sub()
    envbad["tags"] = {"colour": 1}
    body = problem(post(client, {"submissions": [good, envbad]}), 422)
    assert body["pointer"] == "/submissions/1/tags/colour", body


# ---- body limit: raw sockets, so we control what is (not) sent ----

def raw_exchange(port, head, body_chunks=(), pause=0.0, read_timeout=10.0):
    """Send @head then @body_chunks; return (status, headers+body text, bytes sent of the body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout * SLOW)
    sent = 0
    try:
        s.sendall(head)
        for chunk in body_chunks:
            if pause:
                time.sleep(pause)
            try:
                s.sendall(chunk)
                sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        data = b""
        try:
            while b"\r\n\r\n" not in data or len(data) < 12:
                part = s.recv(65536)
                if not part:
                    break
                data += part
            # The rest of a small body, if any.
            s.settimeout(0.5)
            while True:
                part = s.recv(65536)
                if not part:
                    break
                data += part
        except (socket.timeout, ConnectionResetError):
            pass
    finally:
        s.close()
    text = data.decode("latin-1")
    status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/1.") else None
    return status, text, sent


def test_body_limit_content_length(make_server):
    s = make_server("--body-limit", "100000")
    head = (b"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200000\r\n\r\n")
    t0 = time.monotonic()
    status, text, _ = raw_exchange(s.port, head)   # no body at all
    assert status == 413, text[:500]
    assert "application/problem+json" in text.lower()
    assert time.monotonic() - t0 < 5 * SLOW, "answered without waiting for the body"
    with s.client() as c:
        r = c.post("/v1/submissions", json=compile_sub())
        assert r.status_code == 202, "the server still works: " + r.text


def test_body_limit_chunked(make_server):
    s = make_server("--body-limit", "100000")
    head = (b"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    piece = b"x" * 10000
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(20)] + [b"0\r\n\r\n"]
    status, text, sent = raw_exchange(s.port, head, chunks)
    assert status == 413, text[:500]
    with s.client() as c:
        assert c.get("/livez").status_code == 200


def test_body_just_under_limit(make_server):
    s = make_server("--body-limit", "100000")
    with s.client() as c:
        src = "// " + "y" * 90000 + "\n" + GOOD_KERNEL
        r = c.post("/v1/submissions", json=compile_sub(src))
        assert r.status_code == 202, r.text[:300]
        src = "// " + "y" * 110000 + "\n" + GOOD_KERNEL
        problem(c.post("/v1/submissions", json=compile_sub(src)), 413)


# ---- memory under hostile bodies (issue 26 item 2) --------------------------

def vm_kb(server, field):
    """A Vm* line of the server's /proc status (VmRSS, VmHWM) in kB."""
    for line in open(f"/proc/{server.proc.pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def post_raw(s, body, timeout=60):
    with s.client() as c:
        return c.post("/v1/submissions", content=body, headers={"content-type": "application/json"},
                      timeout=timeout * SLOW)


def test_batch_of_empty_objects_refused_before_parsing(make_server):
    """Issue 26's probe: 18 MB of {} took the server to 1.39 GB before its 422."""
    s = make_server()
    body = b'{"submissions":[' + b"{}," * 5_999_999 + b"{}]}"
    r = post_raw(s, body)
    p = problem(r, 422)
    assert p["pointer"] == "/submissions", p
    assert "this one has 6000000" in p["detail"], p
    # The body itself (18 MB) and the server's own ~15 MB; a parse tree would be ~1.4 GB.
    if not SANITIZED:   # ASan's shadow and quarantine are not the server's
        assert vm_kb(s, "VmHWM") < 160 * 1024, f"peak RSS {vm_kb(s, 'VmHWM')} kB"


def test_body_of_tiny_values_refused_for_its_tree(make_server):
    """One submission carrying 2M numbers: within the batch and depth limits, 413 from its text."""
    s = make_server()
    body = b'{"submissions":[{"mode":"compile","source":"x","tags":{"n":[' + b"0," * 2_000_000 + b"0]}}]}"
    p = problem(post_raw(s, body), 413)
    assert p["pointer"].startswith("/submissions/0/tags/n/"), p
    if not SANITIZED:
        assert vm_kb(s, "VmHWM") < 120 * 1024, f"peak RSS {vm_kb(s, 'VmHWM')} kB"
    with s.client() as c:
        assert c.post("/v1/submissions", json=compile_sub()).status_code == 202


def test_memory_given_back_after_large_requests(make_server):
    """Parsed, validated and refused (503 queue full) 16 MB batches: the heap goes back to the kernel."""
    if SANITIZED:
        pytest.skip("ASan's allocator keeps freed memory in quarantine; malloc_trim() is glibc's")
    s = make_server("--max-queued", "1")
    with s.client() as c:
        assert c.post("/v1/submissions", json=compile_sub()).status_code == 202   # the queue is full now
    time.sleep(0.5)
    base = vm_kb(s, "VmRSS")
    item = json.dumps(compile_sub("//" + "p" * 3900 + "\n" + GOOD_KERNEL)).encode()
    body = b'{"submissions":[' + b",".join([item] * 4096) + b"]}"
    for _ in range(2):
        problem(post_raw(s, body), 503)
    time.sleep(1.5 * SLOW)   # the sweeper trims four times a second
    after = vm_kb(s, "VmRSS")
    assert after - base < 48 * 1024, f"RSS {base} kB before, {after} kB after"


def test_bodies_in_flight_capped(make_server):
    """Bodies count against --body-inflight-limit as their bytes arrive: one that would pass it is
    answered 503 before it is read; declaring a large body and trickling it holds only what was sent."""
    s = make_server("--body-limit", "1M", "--body-inflight-limit", "1M")
    head = (b"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 900000\r\n\r\n")
    # Declared and trickled: four connections that sent a few bytes each lock nobody out.
    tricklers = [socket.create_connection(("127.0.0.1", s.port), timeout=10 * SLOW) for _ in range(4)]
    try:
        for t in tricklers:
            t.sendall(head + b'{"mode":"compile","source":"')
        time.sleep(0.3)
        with s.client() as c:
            r = c.post("/v1/submissions", json=compile_sub("// " + "y" * 800000 + "\n" + GOOD_KERNEL))
            assert r.status_code == 202, r.text[:300]
    finally:
        for t in tricklers:
            t.close()
    time.sleep(1.0 * SLOW)   # the answered request's bytes are released when libmicrohttpd completes it
    # Sent, not yet complete: 850 kB held; a 1,000,000-byte body cannot fit beside it and is refused
    # before it is read. (Bytes count as the server reads them: it refuses as soon as it holds 64 kB of
    # the first; until then the probe waits for a body that never comes, so each probe waits 2 s at most.)
    held = socket.create_connection(("127.0.0.1", s.port), timeout=10 * SLOW)
    probe = head.replace(b"Content-Length: 900000", b"Content-Length: 1000000")
    try:
        held.sendall(head + b'{"mode":"compile","source":"' + b"z" * 850000)
        status = text = None
        for _ in range(10):
            time.sleep(0.3)
            status, text, _ = raw_exchange(s.port, probe, read_timeout=2.0)
            if status is not None:
                break
        assert status == 503, text[:500] if text else text
        assert "retry-after: 1" in text.lower() and "application/problem+json" in text.lower(), text[:500]
    finally:
        held.close()
    # Released with the connection, once the server has seen it close (a 503 until then says to retry).
    deadline = time.monotonic() + 10 * SLOW
    with s.client() as c:
        while True:
            r = c.post("/v1/submissions", json=compile_sub("// " + "y" * 800000 + "\n" + GOOD_KERNEL))
            if r.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert r.status_code == 202, r.text[:300]


def test_libmicrohttpd_errors_are_problems(server):
    """libmicrohttpd's own 414 and 431 (before any route) are problem+json, not HTML."""
    for head, status in ((b"GET /v1/" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
                         (b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 + b"\r\n\r\n", 431)):
        got, text, _ = raw_exchange(server.port, head)
        assert got == status, text[:300]
        hdr, _, body = text.partition("\r\n\r\n")
        assert "content-type: application/problem+json" in hdr.lower(), hdr
        assert f'"status":{status}' in body, body


def test_one_busy_trainer_fits_the_per_address_limit(server):
    """A trainer on one address with 600 connections open (hundreds of long-polls: the throughput
    benchmark holds 512) is still served: the default per-address limit leaves it room, while one
    address still cannot take every connection (hostile test_http_abuse)."""
    socks = []
    try:
        for _ in range(600):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=10 * SLOW))
        got, text, _ = raw_exchange(server.port, b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert got == 200, text[:300]
    finally:
        for s in socks:
            s.close()
