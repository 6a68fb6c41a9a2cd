"""
Tasks, stats, Prometheus metrics and the health endpoints.
"""
import math
import re
import time

import pytest

from conftest import SLOW, accepted, compile_sub, problem, task_dir, unique, wait_done, GOOD_KERNEL, BROKEN_KERNEL

SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'                                  # name
    r'(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})?'  # labels
    r' (NaN|[+-]?Inf|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)'      # value
    r'( -?\d+)?$')                                                   # timestamp
COMMENT = re.compile(r'^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* '
                     r'(counter|gauge|histogram|summary|untyped))$')


def parse_metrics(text):
    """{(name, frozenset(labels)): value}; asserts every line is valid exposition format."""
    out = {}
    types = {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            assert COMMENT.match(line), f"bad comment line {line!r}"
            if line.startswith("# TYPE"):
                _, _, name, kind = line.split(" ")
                assert name not in types, f"TYPE twice for {name}"
                types[name] = kind
            continue
        m = SAMPLE.match(line)
        assert m, f"bad sample line {line!r}"
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"duplicate sample {line!r}"
        out[key] = float(m.group(3))
    for (name, _), v in out.items():
        base = re.sub(r"_(bucket|sum|count|total)$", "", name)
        if types.get(name) == "counter" or types.get(base) == "counter":
            assert v >= 0 and not math.isnan(v), (name, v)
    return out, types


def total(samples, name, **labels):
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def test_livez(client):
    r = client.get("/livez")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


def test_readyz_without_gpu(client):
    r = client.get("/readyz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ready"] is True
    assert body["gpus"] == []
    assert body["compile_workers"]["configured"] == 1
    assert body["compile_workers"]["ready"] >= 1


def test_tasks(client):
    r = client.get("/v1/tasks")
    assert r.status_code == 200
    body = r.json()
    files = [p for p in task_dir().rglob("*.json") if not p.name.endswith(".schema.json")]
    assert body["count"] == len(body["items"])
    if not files:
        pytest.skip("no task library")
    names = [t["name"] for t in body["items"]]
    # natural order (common/tasklib.c): digit runs compare as numbers, l1_2 before l1_10
    assert names == sorted(names, key=lambda n: [(0, int(p), p) if p.isdigit() else (1, 0, p)
                                                 for p in re.split(r"(\d+)", n)])
    assert body["count"] >= 1
    name = names[0]
    t = client.get(f"/v1/tasks/{name}")
    assert t.status_code == 200
    task = t.json()
    assert task["name"] == name
    assert isinstance(task["reference"].get("source"), str) and "__global__" in task["reference"]["source"] \
        or any("library" in s for s in task["reference"]["plan"])
    p = client.get(f"/v1/tasks/{name}/prompt")
    assert p.status_code == 200
    assert p.headers["content-type"].startswith("text/plain")
    assert name in p.text or task.get("title", "\0") in p.text
    for b in task["buffers"]:
        assert b["name"] in p.text, f"prompt does not name buffer {b['name']}"
    problem(client.get("/v1/tasks/no_such_task_zz"), 404)
    problem(client.get("/v1/tasks/no_such_task_zz/prompt"), 404)
    # Filters.
    lvl = task.get("level")
    if lvl:
        listed = client.get("/v1/tasks", params={"level": lvl}).json()["items"]
        assert name in [x["name"] for x in listed] and all(x["level"] == lvl for x in listed)
    body = problem(client.get("/v1/tasks", params={"level": "x"}), 422)
    assert body["pointer"] == "/query/level", body
    body = problem(client.get("/v1/tasks", params={"colour": "red"}), 422)
    assert body["pointer"] == "/query/colour", body


def test_stats_move(client):
    before = client.get("/v1/stats")
    assert before.status_code == 200
    b = before.json()
    sid = accepted(client.post("/v1/submissions", json=compile_sub(unique(BROKEN_KERNEL))))
    wait_done(client, sid)
    a = client.get("/v1/stats").json()
    assert a["submissions"]["total"] == b["submissions"]["total"] + 1
    assert a["submissions"]["by_verdict"].get("compile_error", 0) == \
        b["submissions"]["by_verdict"].get("compile_error", 0) + 1
    assert a["submissions"]["by_state"].get("done", 0) == b["submissions"]["by_state"].get("done", 0) + 1
    for k in ("queued", "compiled", "running"):
        assert a["queue"][k] == a["submissions"]["by_state"].get(k, 0)
    assert a["cache"]["misses"] >= b["cache"]["misses"] + 1


def test_metrics(client):
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    s1, types = parse_metrics(r.text)
    assert all(n.startswith("kevald_") for n, _ in s1), "every family is prefixed kevald_"
    for fam in ("kevald_http_requests_total", "kevald_http_request_duration_seconds", "kevald_submissions_total",
                "kevald_queue_depth", "kevald_workers", "kevald_compile_cache_hits_total",
                "kevald_compile_cache_misses_total"):
        assert fam in types, f"missing {fam}"
    assert types["kevald_http_requests_total"] == "counter"
    assert types["kevald_submissions_total"] == "counter"
    assert types["kevald_queue_depth"] == "gauge"
    assert types["kevald_http_request_duration_seconds"] == "histogram"

    src = unique(GOOD_KERNEL)
    for _ in range(2):      # a miss, then a hit
        wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub(src))))
    problem(client.get("/v1/submissions/999999999"), 404)
    # Store-derived families come from a snapshot at most 5 s old
    # (server/http/api_ops.c STATS_CACHE_S); allow that and 2 s more (scaled on a slow build), no more.
    deadline = time.monotonic() + 5 + 2 * SLOW
    while True:
        s2, _ = parse_metrics(client.get("/metrics").text)
        if total(s2, "kevald_submissions_total", verdict="compiled") >= \
                total(s1, "kevald_submissions_total", verdict="compiled") + 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert total(s2, "kevald_http_requests_total") >= total(s1, "kevald_http_requests_total") + 5
    assert total(s2, "kevald_http_requests_total", route="/v1/submissions", code="202") >= \
        total(s1, "kevald_http_requests_total", route="/v1/submissions", code="202") + 2
    assert total(s2, "kevald_http_requests_total", code="404") >= \
        total(s1, "kevald_http_requests_total", code="404") + 1
    assert total(s2, "kevald_submissions_total", verdict="compiled") >= \
        total(s1, "kevald_submissions_total", verdict="compiled") + 2
    assert total(s2, "kevald_compile_cache_misses_total") >= total(s1, "kevald_compile_cache_misses_total") + 1
    assert total(s2, "kevald_compile_cache_hits_total") >= total(s1, "kevald_compile_cache_hits_total") + 1
    assert total(s2, "kevald_http_request_duration_seconds_count", route="/v1/submissions") >= \
        total(s1, "kevald_http_request_duration_seconds_count", route="/v1/submissions") + 2
    assert total(s2, "kevald_workers", role="compile", state="ready") >= 1


def test_parse_metrics_rejects_garbage():
    """The parser above must be able to fail, or test_metrics proves nothing."""
    for bad in ("kevald_x{a=\"1\"} ", "kevald x 1", "# TYPE kevald_x countr", "kevald_x{a=1} 2", "kevald_x 1 2 3"):
        with pytest.raises(AssertionError):
            parse_metrics(bad)
    ok, _ = parse_metrics('# HELP kevald_x help text\n# TYPE kevald_x counter\nkevald_x{a="b"} 3\n')
    assert ok[("kevald_x", frozenset({("a", "b")}))] == 3
