"""
The dashboard's JSON routes (docs/dashboard.md, server/api_dashboard.c) and
the duration histograms of /metrics, over real compile-mode results:

  * the figures are the SQL views' (the test reads the same views from the
    database file with sqlite3 and compares);
  * counts, rates, pass@k and turns follow from what was submitted;
  * bad query parameters are 422 problem+json naming /query/NAME; unknown
    runs, tasks and submissions are 404;
  * auth: the data routes need a token where the API does, the page and its
    assets do not; a non-admin token sees its own submissions only;
  * a database from before migration 006 gets its history rolled up.
"""
import json
import math
import os
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import (PG_STORE, PROBLEM_JSON, SOURCE_ROOT, accepted, compile_sub, problem, unique, wait_done,
                      BROKEN_KERNEL, GOOD_KERNEL)
from test_ops import parse_metrics, total


def run_id():
    return "it-" + uuid.uuid4().hex[:10]


def submit_done(client, subs):
    r = client.post("/v1/submissions", json={"submissions": subs})
    assert r.status_code == 202, r.text
    return [wait_done(client, sid) for sid in r.json()["ids"]]


def view(server, sql, *args):
    """Rows of @sql (? parameters) read from the server's database directly, as dicts."""
    if PG_STORE:
        return pg_view(server.db, sql, args)
    con = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, args)]
    finally:
        con.close()


def pg_view(uri, sql, args):
    """view() on PostgreSQL: psql returns the rows as one JSON array (SQLite sorts NULL first: so here)."""
    for a in args:
        sql = sql.replace("?", "'" + str(a).replace("'", "''") + "'", 1)
    sql = sql.replace("ORDER BY step", "ORDER BY step NULLS FIRST")
    bin_dir = os.environ.get("KEVALD_TEST_PG_BIN")
    exe = str(Path(bin_dir) / "psql") if bin_dir else "psql"
    out = subprocess.run([exe, "-X", "-At", "-d", uri, "-c", f"SELECT coalesce(json_agg(t), '[]') FROM ({sql}) t"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def pass_at_k(n, c, k):
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@pytest.fixture(scope="module")
def run(client):
    """A run of compile-mode results: steps 0..2, per step 3 compiled and 1 compile error; step 2
    resubmits step 1's sources (compile cache hits)."""
    rid = run_id()
    subs = []
    good = [unique(GOOD_KERNEL) for _ in range(3)]
    for step in range(3):
        for i in range(3):
            subs.append(compile_sub(good[i] if step >= 1 else unique(GOOD_KERNEL),
                                    tags={"run_id": rid, "step": step, "sample": i}))
        subs.append(compile_sub(unique(BROKEN_KERNEL), tags={"run_id": rid, "step": step, "sample": 3}))
    done = submit_done(client, subs[:4] + subs[4:8])
    done += submit_done(client, [compile_sub(good[i], tags={"run_id": rid, "step": 2, "sample": i}) for i in range(3)]
                        + [subs[-1]])
    return rid, done


def test_run_figures_are_the_views(server, client, run):
    rid, done = run
    d = client.get("/v1/dashboard/run", params={"id": rid}).json()
    assert d["run"]["evaluated"] == 12 and d["run"]["compiled"] == 9 and d["run"]["correct"] == 0
    assert d["run"]["min_step"] == 0 and d["run"]["max_step"] == 2
    assert [s["step"] for s in d["steps"]] == [0, 1, 2]
    for s in d["steps"]:
        assert s["evaluated"] == 4 and s["compiled"] == 3 and s["correct_rate"] == 0
        assert s["reward"] == {"p10": 0, "p25": 0, "p50": 0, "p75": 0, "p90": 0}  # nothing correct: reward 0
        assert s["speedup"] is None
    # The same rows as the views SQL and Grafana users read.
    assert [d["run"]] == view(server, "SELECT * FROM v_run_summary WHERE run_id = ?", rid)
    rows = view(server, "SELECT * FROM v_run_steps WHERE run_id = ? ORDER BY step", rid)
    for got, want in zip(d["steps"], rows):
        assert {k: got[k] for k in want} == want
    # pass@k over the samples: no task here, 12 samples, 0 correct.
    (t,) = d["tasks"]
    assert t["task"] is None and t["samples"] == 12 and t["correct"] == 0
    assert t["pass_at_k"] == {"1": 0.0, "5": 0.0, "10": 0.0}
    # Step range and k travel as parameters.
    d = client.get("/v1/dashboard/run", params={"id": rid, "from_step": 1, "to_step": 1, "k": "2,20"}).json()
    assert [s["step"] for s in d["steps"]] == [1] and d["to_step"] == 1 and d["k"] == [2, 20]
    assert d["tasks"][0]["samples"] == 4 and d["tasks"][0]["pass_at_k"] == {"2": 0.0, "20": None}
    runs = client.get("/v1/dashboard/runs", params={"q": rid}).json()
    assert [r["run_id"] for r in runs["items"]] == [rid] and runs["next_offset"] is None


def test_pass_at_k_route(client):
    """One task, 5 samples, 2 of them 'correct' is impossible without a GPU; so pass@k is checked on
    compile-mode submissions whose correctness is 0 (above) and on its boundaries: k > n is null."""
    rid = run_id()
    submit_done(client, [compile_sub(unique(GOOD_KERNEL), tags={"run_id": rid, "step": 0})])
    d = client.get("/v1/dashboard/run", params={"id": rid, "k": "1,2"}).json()
    assert d["tasks"][0]["pass_at_k"] == {"1": 0.0, "2": None}


def test_now(server, client, run):
    d = client.get("/v1/dashboard/now", params={"window": 5}).json()
    assert d["window_minutes"] == 5 and len(d["series"]["minute_start"]) == 5
    assert all(b - a == 60 for a, b in zip(d["series"]["minute_start"], d["series"]["minute_start"][1:]))
    assert d["series"]["minute_start"][-1] <= d["now"] < d["series"]["minute_start"][-1] + 60
    assert sum(d["series"]["evaluations"]) >= 12
    assert sum(d["series"]["verdicts"]["compile_error"]) >= 3
    assert d["queue"]["queued"] == d["totals"]["by_state"].get("queued", 0)
    stats = client.get("/v1/stats").json()
    assert d["totals"]["submissions"] == stats["submissions"]["total"]
    assert d["cache"]["hits"] >= 3 and d["cache"]["hit_rate"] == pytest.approx(
        d["cache"]["hits"] / (d["cache"]["hits"] + d["cache"]["misses"]))
    assert d["workers"]["compile"]["configured"] == 1 and d["workers"]["gpus"] == []
    # Per minute, from the view.
    rows = view(server, "SELECT minute_start, sum(n) AS n FROM v_activity_minutely WHERE verdict != 'cancelled' "
                        "AND minute_start >= ? GROUP BY 1", d["series"]["minute_start"][0])
    byminute = dict(zip(d["series"]["minute_start"], d["series"]["evaluations"]))
    for r in rows:
        if r["minute_start"] in byminute:
            assert byminute[r["minute_start"]] == r["n"]


def test_tasks_and_task(server, client):
    lib = client.get("/v1/tasks").json()["items"]
    items = client.get("/v1/dashboard/tasks", params={"limit": 1000}).json()["items"]
    assert items == view(server, "SELECT * FROM v_task_summary ORDER BY submissions DESC, task")
    if lib:
        name = lib[0]["name"]
        d = client.get(f"/v1/dashboard/tasks/{name}").json()
        assert d["info"]["name"] == name and d["leaderboard"] == [] and d["median_speedup"] is None
        assert d["summary"]["task"] == name
    problem(client.get("/v1/dashboard/tasks/no_such_task_zz"), 404)


def test_submission_and_turns(client):
    rid = run_id()
    (a,) = submit_done(client, [compile_sub(unique(BROKEN_KERNEL), tags={"run_id": rid, "turn": 0})])
    (b,) = submit_done(client, [compile_sub(unique(GOOD_KERNEL), tags={"run_id": rid, "turn": 1, "parent": a["id"]})])
    (c,) = submit_done(client, [compile_sub(unique(GOOD_KERNEL), tags={"run_id": rid, "turn": 2, "parent": b["id"]})])
    d = client.get(f"/v1/dashboard/submissions/{b['id']}").json()
    assert d["submission"]["id"] == b["id"] and d["submission"]["result"]["verdict"] == "compiled"
    assert "__global__ void saxpy" in d["request"]["source"]
    assert [t["id"] for t in d["turns"]["ancestors"]] == [a["id"]]
    assert [t["id"] for t in d["turns"]["children"]] == [c["id"]]
    assert d["turns"]["children"][0]["turn"] == 2 and "token_id" not in d["turns"]["children"][0]
    d = client.get(f"/v1/dashboard/submissions/{c['id']}").json()
    assert [t["id"] for t in d["turns"]["ancestors"]] == [a["id"], b["id"]] and d["turns"]["children"] == []
    d = client.get(f"/v1/dashboard/submissions/{a['id']}").json()
    assert "error" in d["submission"]["result"]["compile"]["log"]
    problem(client.get("/v1/dashboard/submissions/987654321"), 404)
    problem(client.get("/v1/dashboard/submissions/abc"), 404)
    problem(client.get("/v1/dashboard/run", params={"id": "no-such-run-zz"}), 404)


@pytest.mark.parametrize("path,params,pointer", [
    ("/v1/dashboard/now", {"window": "0"}, "/query/window"),
    ("/v1/dashboard/now", {"window": "1441"}, "/query/window"),
    ("/v1/dashboard/now", {"window": "ten"}, "/query/window"),
    ("/v1/dashboard/now", {"window": "5x"}, "/query/window"),
    ("/v1/dashboard/now", {"colour": "red"}, "/query/colour"),
    ("/v1/dashboard/runs", {"limit": "0"}, "/query/limit"),
    ("/v1/dashboard/runs", {"limit": "1001"}, "/query/limit"),
    ("/v1/dashboard/runs", {"offset": "-1"}, "/query/offset"),
    ("/v1/dashboard/runs", {"q": ""}, "/query/q"),
    ("/v1/dashboard/runs", {"q": "x" * 257}, "/query/q"),
    ("/v1/dashboard/run", {}, "/query/id"),
    ("/v1/dashboard/run", {"id": ""}, "/query/id"),
    ("/v1/dashboard/run", {"id": "r", "from_step": "-2"}, "/query/from_step"),
    ("/v1/dashboard/run", {"id": "r", "to_step": "x"}, "/query/to_step"),
    ("/v1/dashboard/run", {"id": "r", "from_step": "5", "to_step": "4"}, "/query/from_step"),
    ("/v1/dashboard/run", {"id": "r", "k": "0"}, "/query/k"),
    ("/v1/dashboard/run", {"id": "r", "k": "1,,2"}, "/query/k"),
    ("/v1/dashboard/run", {"id": "r", "k": "1,2,3,4,5,6,7,8,9"}, "/query/k"),
    ("/v1/dashboard/run", {"id": "r", "k": "10001"}, "/query/k"),
    ("/v1/dashboard/run", {"id": "r", "step": "1"}, "/query/step"),
    ("/v1/dashboard/tasks", {"limit": "-5"}, "/query/limit"),
    ("/v1/dashboard/tasks/some_task", {"limit": "1e3"}, "/query/limit"),
    ("/v1/dashboard/tasks/some_task", {"offset": "1000001"}, "/query/offset"),
    ("/v1/dashboard/submissions/1", {"verbose": "1"}, "/query/verbose"),
    ("/", {"x": "1"}, "/query/x"),
])
def test_bad_query_is_problem(client, path, params, pointer):
    r = client.get(path, params=params)
    body = problem(r, 422)
    assert r.headers["content-type"].startswith(PROBLEM_JSON)
    assert body["pointer"] == pointer, body
    assert body["type"].endswith("/invalid-field")


def test_page_and_assets(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "/assets/app.js" in r.text and "/assets/uPlot.iife.min.js" in r.text
    assert "http://" not in r.text and "https://" not in r.text  # nothing from elsewhere (no CDN)
    assert "script-src 'self'" in r.headers["content-security-policy"]
    js = client.get("/assets/uPlot.iife.min.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert js.text == (SOURCE_ROOT / "server/assets/vendor/uplot/uPlot.iife.min.js").read_text()
    lic = client.get("/assets/LICENSE")
    assert lic.status_code == 200 and "MIT" in lic.text and "Leon Sorokin" in lic.text
    assert client.head("/assets/app.css").status_code == 200
    problem(client.get("/assets/index.html"), 404)
    problem(client.get("/assets/../store.c"), 404)
    problem(client.post("/"), 405)


def test_metrics_histograms(client, run):
    samples, types = parse_metrics(client.get("/metrics").text)
    for name in ("kevald_submission_latency_seconds", "kevald_compile_duration_seconds",
                 "kevald_job_gpu_busy_seconds"):
        assert types[name] == "histogram"
    count = total(samples, "kevald_submission_latency_seconds_count", mode="compile")
    assert count >= 12
    buckets = sorted(((float(dict(ls)["le"]), v) for (n, ls), v in samples.items()
                      if n == "kevald_submission_latency_seconds_bucket" and ("mode", "compile") in ls))
    assert buckets[-1][0] == math.inf and buckets[-1][1] == count
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets
    assert total(samples, "kevald_submission_latency_seconds_sum", mode="compile") > 0
    compiles = total(samples, "kevald_compile_duration_seconds_count")
    assert compiles >= 9  # every cache miss; cache hits did not compile
    assert total(samples, "kevald_job_gpu_busy_seconds_count") == 0  # no GPU here


def test_auth_and_visibility(make_server):
    s = make_server("--auth", "on")
    admin = s.kevald("token", "create", "boss", "--admin", "--db", str(s.db)).stdout.strip()
    alice = s.kevald("token", "create", "alice", "--db", str(s.db)).stdout.strip()
    bob = s.kevald("token", "create", "bob", "--db", str(s.db)).stdout.strip()
    with s.client() as c:
        for p in ("/v1/dashboard/now", "/v1/dashboard/runs", "/v1/dashboard/run?id=x", "/v1/dashboard/tasks",
                  "/v1/dashboard/tasks/x", "/v1/dashboard/submissions/1"):
            problem(c.get(p), 401)
        assert c.get("/").status_code == 200 and c.get("/assets/app.js").status_code == 200
        ha = {"Authorization": f"Bearer {alice}"}
        sid = accepted(c.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL), tags={"run_id": "v"}),
                              headers=ha))
        for _ in range(600):
            if c.get(f"/v1/submissions/{sid}", headers=ha, params={"wait": 5}).json()["state"] == "done":
                break
        assert c.get(f"/v1/dashboard/submissions/{sid}", headers=ha).status_code == 200
        problem(c.get(f"/v1/dashboard/submissions/{sid}", headers={"Authorization": f"Bearer {bob}"}), 404)
        assert c.get(f"/v1/dashboard/submissions/{sid}", headers={"Authorization": f"Bearer {admin}"}).status_code == 200
        r = c.get("/v1/dashboard/now", headers={"Authorization": f"Bearer {bob}"})
        assert r.status_code == 200 and r.json()["totals"]["submissions"] == 1


@pytest.mark.skipif(PG_STORE, reason="builds a schema-5 SQLite file; PostgreSQL fleets start at the current schema")
def test_upgrade_rolls_up_history(make_server, tmp_path):
    """A database at schema 5 with finished submissions: migration 006 fills the rollups from them."""
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript((SOURCE_ROOT / "migrations" / "001_init.sql").read_text())
    for i, (verdict, speedup) in enumerate([("correct", 2.0), ("correct", 1.0), ("incorrect", None)], 1):
        con.execute("INSERT INTO submissions(id, state, verdict, task, mode, run_id, created_at, finished_at, "
                    "speedup, tags) VALUES (?, 'done', ?, 'old_task', 'full', 'old-run', 1000, 1002, ?, ?)",
                    (i, verdict, speedup, f'{{"run_id": "old-run", "step": {i % 2}}}'))
        con.execute("INSERT INTO submission_results(id, result) VALUES (?, ?)",
                    (i, f'{{"verdict": "{verdict}", "reward_fields": {{"compiled": true}}, "gpu": {{"index": 0}}, '
                        f'"gpu_busy_ms": 5.0, "compile": {{"cache_hit": false, "compile_ms": 20.0}}}}'))
    for n in ("002_task_stats", "003_cache_lru", "004_insert_counts", "005_fair_share"):
        con.executescript((SOURCE_ROOT / "migrations" / f"{n}.sql").read_text())
    con.execute("PRAGMA user_version = 5")
    con.commit()
    con.close()
    s = make_server(db=db)
    with s.client() as c:
        d = c.get("/v1/dashboard/run", params={"id": "old-run"}).json()
        assert d["run"]["evaluated"] == 3 and d["run"]["correct"] == 2
        assert [(x["step"], x["evaluated"], x["correct"]) for x in d["steps"]] == [(0, 1, 1), (1, 2, 1)]
        (task,) = d["tasks"]
        assert task["best_speedup"] == 2.0 and task["best_id"] == 1 and task["best_step"] == 1
        assert task["pass_at_k"] == {"1": pytest.approx(pass_at_k(3, 2, 1)), "5": None, "10": None}
        d = c.get("/v1/dashboard/run", params={"id": "old-run", "k": "2,3"}).json()
        assert d["tasks"][0]["pass_at_k"] == {"2": 1.0, "3": 1.0}  # 1 incorrect of 3: any 2 hold a correct one
        # Nearest rank over {0 (the incorrect one), 2.0}, read from 8 buckets per doubling.
        assert d["steps"][1]["reward"]["p90"] == pytest.approx(2.0, rel=0.05)
        assert d["steps"][1]["reward"]["p10"] == 0.0 and d["steps"][1]["reward"]["p50"] == 0.0
        assert d["steps"][1]["speedup"]["p50"] == pytest.approx(2.0, rel=0.05)
        t = c.get("/v1/dashboard/tasks/old_task").json()
        assert [x["id"] for x in t["leaderboard"]] == [1, 2]
        assert t["median_speedup"] == pytest.approx(1.0, rel=0.05)  # lower median of {1, 2}
        assert {v["verdict"]: v["n"] for v in t["verdicts"]} == {"correct": 2, "incorrect": 1}
        samples, _ = parse_metrics(c.get("/metrics").text)
        assert total(samples, "kevald_job_gpu_busy_seconds_count") == 3
        assert total(samples, "kevald_compile_duration_seconds_sum") == pytest.approx(0.06)


def test_grafana_dashboard_queries_exported_metrics(client, run):
    """deploy/grafana/kevald.json is valid JSON and queries only metric families /metrics has."""
    import json
    import re
    dash = json.loads((SOURCE_ROOT / "deploy" / "grafana" / "kevald.json").read_text())
    _, types = parse_metrics(client.get("/metrics").text)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 15
    used = set()
    for e in exprs:
        used |= {m for m in re.findall(r"\b(kevald_[a-z_]+)", e)}
    for m in sorted(used):
        base = re.sub(r"_(bucket|sum|count)$", "", m)
        assert m in types or base in types, f"grafana queries {m}, which /metrics does not export"
    for name in ("kevald_submission_latency_seconds", "kevald_compile_duration_seconds", "kevald_job_gpu_busy_seconds"):
        assert f"{name}_bucket" in used
