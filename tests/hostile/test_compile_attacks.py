"""
Compile-time attacks (mode "compile", no GPU needed): reading host files
through #include, escaping the toolkit, runaway compiles, oversized bodies,
options that read or write files, and bodies that are not UTF-8. Each case
asserts its exact outcome, that no host file text or supervisor environment
shows up in the answer or the log, and that the service then compiles a
normal submission normally.
"""
import json
import time

import httpx
import pytest

from conftest import (PASSWD_MARK, SECRET_ENV, SLOW, assert_nothing_leaked,
                      assert_serves_normally, compile_body, submit, unique_good_source, wait_done)

INCLUDE_ATTACKS = {
    "absolute": '#include "/etc/passwd"\n',
    "absolute_angle": "#include </etc/passwd>\n",
    "proc_self_environ": '#include "/proc/self/environ"\n',
    "proc_1_environ": '#include "/proc/1/environ"\n',
    "dev_stdin_frame_pipe": '#include "/dev/stdin"\n',
    "dev_zero_endless": '#include "/dev/zero"\n',
    "dotdot_quote": '#include "../../../../../../../etc/passwd"\n',
    "dotdot_angle": "#include <../../../../../../../etc/passwd>\n",
    "toolkit_dotdot": '#include "/usr/local/cuda/include/../../../../etc/passwd"\n',
    "outside_toolkit_system_header": "#include </usr/include/stdio.h>\n",
    "libc_header_not_in_toolkit": "#include <linux/limits.h>\n",
    "computed_macro": '#define F "/etc/passwd"\n#include F\n',
    "computed_stringize": "#define S(x) #x\n#define P(x) S(x)\n#include P(/etc/passwd)\n",
    "digraph": '%:include "/etc/passwd"\n',
    "line_splice_directive": '#\\\ninclude "/etc/passwd"\n',
    "line_splice_path": '#include "/et\\\nc/passwd"\n',
    "comment_between": '#/**/include "/etc/passwd"\n',
    "include_next": '#include_next "/etc/passwd"\n',
    "has_include_probe": '#if __has_include("/etc/shadow")\n#error shadow exists\n#endif\n',
    "line_then_file": '#line 1 "/etc/passwd"\n#include __FILE__\n',
}


@pytest.mark.parametrize("name", sorted(INCLUDE_ATTACKS))
def test_include_attack(server, client, name):
    d = submit(client, compile_body(INCLUDE_ATTACKS[name] + 'extern "C" __global__ void k() {}\n'))
    text = json.dumps(d)
    assert d["verdict"] == "compile_error", text[:2000]
    comp = d["result"]["compile"]
    assert comp["ok"] is False
    assert comp["kernels"] == []
    # The log says why, in terms a model can act on.
    assert "include" in comp["log"].lower() or "cannot open" in comp["log"].lower(), comp["log"]
    assert_nothing_leaked(text, server)
    assert "nologin" not in text and "/bin/bash" not in text
    assert_serves_normally(server, client)


TEMPLATE_BOMB = (
    "template<class T> struct L {};\n"
    "template<class T> struct R {};\n"
    "template<int D, class T> struct E { static const int v = E<D-1, L<T> >::v + E<D-1, R<T> >::v; };\n"
    "template<class T> struct E<0, T> { static const int v = 1; };\n"
    '__global__ void k(int *x) { x[0] = E<40, int>::v; }\n')
MACRO_BOMB = (
    "#define A(x) x x x x x x x x x x\n"
    "#define B(x) A(A(A(x)))\n"
    "#define C(x) B(B(B(x)))\n"
    "int v[] = { C(1,) };\n")


@pytest.mark.parametrize("source", [TEMPLATE_BOMB, MACRO_BOMB], ids=["template_bomb", "macro_bomb"])
def test_runaway_compile_is_killed_at_the_limit(server, client, source):
    t0 = time.monotonic()
    d = submit(client, compile_body(source), wait=60)
    elapsed = time.monotonic() - t0
    assert d["verdict"] == "compile_error", json.dumps(d)[:2000]
    comp = d["result"]["compile"]
    assert comp["ok"] is False
    assert "limit" in comp["log"] and "3 s" in comp["log"], comp["log"]
    assert "time limit" in d["result"]["error"]["message"]
    # Killed at the 3 s limit, not after minutes; a timeout is the kernel's
    # fault, so it is not retried.
    assert 2.5 < elapsed < 3.0 + 10 * SLOW, elapsed
    assert d["attempts"] == 1
    assert_serves_normally(server, client)


def test_runaway_compile_in_a_batch_costs_the_others_one_limit(server, client):
    """A template bomb among compile-only candidates posted together: the group it is merged
    into runs past the 3 s limit, every member goes back to be compiled alone (uncharged), the
    bomb times out alone and the others compile."""
    goods = [unique_good_source() for _ in range(3)]
    t0 = time.monotonic()
    r = client.post("/v1/submissions", json={"submissions": [compile_body(TEMPLATE_BOMB)] +
                                              [compile_body(g) for g in goods]})
    assert r.status_code == 202, r.text
    done = [wait_done(client, i, 60) for i in r.json()["ids"]]
    elapsed = time.monotonic() - t0
    assert done[0]["verdict"] == "compile_error", json.dumps(done[0])[:2000]
    assert "3 s" in done[0]["result"]["compile"]["log"], done[0]["result"]["compile"]
    assert [d["verdict"] for d in done[1:]] == ["compiled"] * 3, [d["verdict"] for d in done]
    assert all(d["attempts"] == 1 for d in done), [d["attempts"] for d in done]
    assert "ran past its deadline: each again alone" in server.log_text(), server.log_tail()
    assert elapsed < 2 * 3.0 + 20 * SLOW, elapsed   # the group's limit, then the bomb's own
    assert_serves_normally(server, client)


def count_submissions(c):
    r = c.get("/v1/submissions?limit=1000")
    assert r.status_code == 200
    return len(r.json()["items"])


def test_hundred_megabyte_body_is_refused_before_queueing(server, client):
    before = count_submissions(client)
    body = b'{"mode":"compile","source":"' + b"a" * (100 << 20) + b'"}'
    try:
        r = client.post("/v1/submissions", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 413, r.text[:500]
        assert r.headers["content-type"].startswith("application/problem+json")
    except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
        pass   # the server may answer and close before the upload ends
    assert count_submissions(client) == before
    assert_serves_normally(server, client)


def rejected_unrun(client, r, pointer, before):
    """@r: refused at acceptance as the candidate's own fault: one row, done, rejected, never compiled."""
    assert r.status_code == 202, r.text[:500]
    ans = r.json()
    assert ans["state"] == "done" and ans["verdict"] == "rejected", ans
    sub = client.get(f"/v1/submissions/{ans['id']}").json()
    res = sub["result"]
    assert res["error"]["kind"] == "submission" and res["error"]["pointer"] == pointer, res["error"]
    assert "compile" not in res and sub["attempts"] == 0, sub   # no worker ever saw it
    assert count_submissions(client) == before + 1


def test_source_over_the_source_limit_is_rejected_unrun(server, client):
    before = count_submissions(client)
    r = client.post("/v1/submissions", json=compile_body("a" * (2 << 20)))
    rejected_unrun(client, r, "/source", before)
    assert_serves_normally(server, client)


FILE_OPTIONS = ["-I/etc", "-I", "--include-path=/etc", "-isystem=/etc", "--pre-include=/etc/passwd",
                "-include", "--create-pch=x.pch", "--use-pch=/etc/passwd", "--pch-dir=/tmp", "-pch",
                "-o", "--output=/tmp/x", "--time=/tmp/t.csv", "-Xptxas=--output-file=/tmp/x",
                "--ptxas-options=--output-file=/tmp/x", "-dlto", "-rdc=true", "--relocatable-device-code=true"]


@pytest.mark.parametrize("opt", FILE_OPTIONS)
def test_option_that_touches_files_is_rejected_unrun(server, client, opt):
    before = count_submissions(client)
    r = client.post("/v1/submissions",
                    json=compile_body('extern "C" __global__ void k() {}', options=["-lineinfo", opt]))
    rejected_unrun(client, r, "/options/1", before)
    assert_serves_normally(server, client)


@pytest.mark.parametrize("raw", [
    b'{"mode":"compile","source":"\xff\xfe kernel"}',          # not UTF-8 at all
    b'{"mode":"compile","source":"\xc0\xaf"}',                 # overlong encoding of '/'
    b'{"mode":"compile","source":"\xed\xa0\x80"}',             # UTF-8-encoded surrogate
    b'{"mode":"compile","source":"a\\ud800b"}',                # lone surrogate escape
    b'{"mode":"compile","source":"a\\u0000b"}',                # NUL inside the source
], ids=["invalid_bytes", "overlong", "surrogate_bytes", "lone_surrogate_escape", "nul"])
def test_source_that_is_not_utf8_is_400(server, client, raw):
    before = count_submissions(client)
    r = client.post("/v1/submissions", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text[:500]
    assert r.headers["content-type"].startswith("application/problem+json")
    assert count_submissions(client) == before
    assert_serves_normally(server, client)


def test_workers_report_every_layer_active(server):
    """The compile workers said in their HELLO which layers hold; on a host
    like the development one (root or user namespaces, Landlock) all do."""
    z = server.readyz().json()
    layers = z["layers"]["compile"]
    for name in ("pdeathsig", "fds", "rlimit", "dumpable", "no_new_privs", "seccomp"):
        assert layers[name]["active"] is True, (name, layers[name])
    for name in ("cwd", "netns", "uid", "landlock"):
        assert isinstance(layers[name]["active"], bool) and layers[name]["detail"], name
    assert SECRET_ENV[1] not in json.dumps(z)
