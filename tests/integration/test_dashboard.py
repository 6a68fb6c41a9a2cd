"""
The dashboard's JSON routes (docs/dashboard.md, server/http/api_dashboard.c) and
the duration histograms of /metrics, over real compile-mode results:

  * the figures are the SQL views' (the test reads the same views from the
    database file with sqlite3 and compares);
  * counts, rates, pass@k and turns follow from what was submitted;
  * bad query parameters are 422 problem+json naming /query/NAME; unknown
    runs, tasks and submissions are 404;
  * auth: the data routes need a token where the API does, the page and its
    assets do not; a non-admin token sees its own submissions only;
  * a database from before migration 006 gets its history rolled up.
  * the reward is the trainer's: the Python client's default reward() of
    each stored result equals v_job_metrics.reward (migration 007), and a
    step's mean reward is the mean of those; the verdict mix per step; a
    compile-only run reports its compile rate and no correct rate;
  * the task browser lists the whole library in natural order (l1_2 before
    l1_10) with its history figures, and the task page carries the
    description and the reference times kevald measured;
  * JSON numbers are written in their shortest round-tripping form.
"""
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from conftest import (PG_STORE, PROBLEM_JSON, SOURCE_ROOT, accepted, compile_sub, problem, unique, wait_done,
                      BROKEN_KERNEL, GOOD_KERNEL)
from test_ops import parse_metrics, total

sys.path.insert(0, str(SOURCE_ROOT / "clients" / "python"))
from kevald.reward import reward as client_reward  # noqa: E402


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
    # A compile-only run: its compile rate, and no correct rate (correctness was never checked).
    assert d["run"]["mode"] == "compile" and d["run"]["compile_mode"] == 12 and d["run"]["checked"] == 0
    assert d["run"]["correct_rate"] is None and d["run"]["compile_rate"] == 0.75
    assert [s["step"] for s in d["steps"]] == [0, 1, 2]
    for s in d["steps"]:
        assert s["evaluated"] == 4 and s["compiled"] == 3 and s["correct_rate"] is None
        assert s["compile_rate"] == 0.75 and s["checked"] == 0
        assert s["verdicts"] == {"compiled": 3, "compile_error": 1}
        assert s["reward"] == {"p10": 0, "p25": 0, "p50": 0, "p75": 0, "p90": 0}  # nothing correct: reward 0
        assert s["mean_reward"] == 0
        assert s["speedup"] is None
    # The same rows as the views SQL and Grafana users read.
    assert [{k: v for k, v in d["run"].items() if k != "mode"}] == view(
        server, "SELECT * FROM v_run_summary WHERE run_id = ?", rid)
    rows = view(server, "SELECT * FROM v_run_steps WHERE run_id = ? ORDER BY step", rid)
    for got, want in zip(d["steps"], rows):
        assert {k: got[k] for k in want} == want
    # pass@k: no task here, 12 samples, none checked for correctness: no pass@k to give.
    (t,) = d["tasks"]
    assert t["task"] is None and t["samples"] == 12 and t["correct"] == 0 and t["checked"] == 0
    assert t["pass_at_k"] == {"1": None, "5": None, "10": None}
    # Step range and k travel as parameters.
    d = client.get("/v1/dashboard/run", params={"id": rid, "from_step": 1, "to_step": 1, "k": "2,20"}).json()
    assert [s["step"] for s in d["steps"]] == [1] and d["to_step"] == 1 and d["k"] == [2, 20]
    assert d["tasks"][0]["samples"] == 4 and d["tasks"][0]["pass_at_k"] == {"2": None, "20": None}
    # The verdict mix per step is v_run_step_verdicts.
    mix = view(server, "SELECT step, verdict, n FROM v_run_step_verdicts WHERE run_id = ? ORDER BY step", rid)
    assert sum(r["n"] for r in mix) == 12 and {r["verdict"] for r in mix} == {"compiled", "compile_error"}
    runs = client.get("/v1/dashboard/runs", params={"q": rid}).json()
    assert [r["run_id"] for r in runs["items"]] == [rid] and runs["next_offset"] is None


def test_pass_at_k_route(client):
    """A compile-only sample says nothing about correctness: pass@k is null for every k (the
    estimator on known data is checked in test_upgrade_rolls_up_history and test_trainer_reward)."""
    rid = run_id()
    submit_done(client, [compile_sub(unique(GOOD_KERNEL), tags={"run_id": rid, "step": 0})])
    d = client.get("/v1/dashboard/run", params={"id": rid, "k": "1,2"}).json()
    assert d["tasks"][0]["pass_at_k"] == {"1": None, "2": None}


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


def natural_key(name):
    return [(0, int(p), p) if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name)]


def test_tasks_and_task(server, client, run):
    every = client.get("/v1/tasks").json()["items"]
    # The browser shows the CUDA library; /v1/tasks also lists the KernelBench-only tasks (issue 29),
    # which have no CUDA reference, shapes or dtypes to show there.
    lib = [t for t in every if "cuda" in t["languages"]]
    assert len(lib) < len(every) or not any("kernelbench" in t["languages"] for t in every)
    names = [t["name"] for t in lib]
    assert len(names) > 100  # the project's library
    # Natural order everywhere: l1_2 before l1_10 (and before l1_100 where there is one).
    assert names == sorted(names, key=natural_key) and names != sorted(names)
    assert names.index("l1_2_standard_matrix_multiplication") < names.index("l1_10_3d_tensor_matrix_multiplication")
    # The browser: the whole library, in the same order, each with its figures (stats null without history).
    d = client.get("/v1/dashboard/tasks", params={"limit": 1000}).json()
    assert [t["name"] for t in d["items"]] == names and d["total"] == len(names) and d["next_offset"] is None
    first = d["items"][0]
    assert first["stats"] is None and first["reference_times"] == []
    assert {"title", "level", "category", "shapes", "provenance", "dtypes"} <= set(first)
    page = client.get("/v1/dashboard/tasks", params={"limit": 5, "offset": 5}).json()
    assert [t["name"] for t in page["items"]] == names[5:10] and page["next_offset"] == 10
    lv2 = client.get("/v1/dashboard/tasks", params={"level": 2, "q": "conv", "limit": 1000}).json()["items"]
    assert lv2 and all(t["level"] == 2 and ("conv" in t["name"] or "conv" in t["title"]) for t in lv2)
    cat = lib[0]["category"]
    assert [t["name"] for t in client.get("/v1/dashboard/tasks", params={"category": cat, "limit": 1000})
            .json()["items"]] == [t["name"] for t in lib if t["category"] == cat]
    # source=history: the tasks with submissions, busiest first: the view's rows.
    items = client.get("/v1/dashboard/tasks", params={"source": "history", "limit": 1000}).json()["items"]
    want = view(server, "SELECT * FROM v_task_summary ORDER BY submissions DESC, task")
    assert sorted(items, key=lambda t: t["task"] or "") == sorted(want, key=lambda t: t["task"] or "")
    assert [t["submissions"] for t in items] == sorted((t["submissions"] for t in items), reverse=True)
    # One task: the library's summary with its description, the published times in provenance.
    t = client.get("/v1/dashboard/tasks/l1_1_square_matrix_multiplication").json()
    assert t["info"]["name"] == "l1_1_square_matrix_multiplication" and t["leaderboard"] == []
    assert t["info"]["description"] == client.get("/v1/tasks/l1_1_square_matrix_multiplication").json()["description"]
    assert t["info"]["provenance"]["h100_torch_eager_ms"] == 2.66 and t["reference_times"] == []
    assert t["summary"]["task"] == "l1_1_square_matrix_multiplication" and t["median_speedup"] is None
    problem(client.get("/v1/dashboard/tasks/no_such_task_zz"), 404)


def test_floats_shortest(client):
    """Reals are written in their shortest round-tripping form, not jansson's 17 digits."""
    raw = client.get("/v1/tasks").text
    assert '"h100_torch_eager_ms":2.66,' in raw, raw[:400]
    assert not re.search(r"\d\.\d{15,}", raw), re.search(r".{40}\d\.\d{15,}.{10}", raw)
    raw = client.get("/v1/dashboard/tasks/l1_1_square_matrix_multiplication").text
    assert '"h100_torch_eager_ms":2.66' in raw and "2.6600000000000001" not in raw


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
    ("/v1/dashboard/tasks", {"source": "all"}, "/query/source"),
    ("/v1/dashboard/tasks", {"level": "11"}, "/query/level"),
    ("/v1/dashboard/tasks", {"level": "0"}, "/query/level"),
    ("/v1/dashboard/tasks", {"category": ""}, "/query/category"),
    ("/v1/dashboard/tasks", {"source": "history", "level": "1"}, "/query/level"),
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
    assert js.text == (SOURCE_ROOT / "server/http/assets/vendor/uplot/uPlot.iife.min.js").read_text()
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
        # Nearest rank over the rewards {0 (the incorrect one), 0.3 + 2.0}, read from 8 buckets per doubling.
        assert d["steps"][1]["reward"]["p90"] == pytest.approx(2.3, rel=0.05)
        assert d["steps"][1]["reward"]["p10"] == 0.0 and d["steps"][1]["reward"]["p50"] == 0.0
        assert d["steps"][1]["speedup"]["p50"] == pytest.approx(2.0, rel=0.05)
        t = c.get("/v1/dashboard/tasks/old_task").json()
        assert [x["id"] for x in t["leaderboard"]] == [1, 2]
        assert t["median_speedup"] == pytest.approx(1.0, rel=0.05)  # lower median of {1, 2}
        assert {v["verdict"]: v["n"] for v in t["verdicts"]} == {"correct": 2, "incorrect": 1}
        samples, _ = parse_metrics(c.get("/metrics").text)
        assert total(samples, "kevald_job_gpu_busy_seconds_count") == 3
        assert total(samples, "kevald_compile_duration_seconds_sum") == pytest.approx(0.06)
        # Migration 007 on that history: the trainer's reward (0.3 + speedup when correct), the verdict mix.
        d = c.get("/v1/dashboard/run", params={"id": "old-run"}).json()
        assert [s["mean_reward"] for s in d["steps"]] == [pytest.approx(1.3), pytest.approx(2.3 / 2)]
        assert [s["verdicts"] for s in d["steps"]] == [{"correct": 1}, {"correct": 1, "incorrect": 1}]
        assert d["run"]["mode"] == "full" and d["run"]["correct_rate"] == pytest.approx(2 / 3)


@pytest.mark.skipif(PG_STORE, reason="builds a schema-6 SQLite file; PostgreSQL fleets start at the current schema")
def test_upgrade_to_007_rewards_history(make_server, tmp_path):
    """A database at schema 6: migration 007 computes each stored result's reward as the client's reward()
    does (the cap at 10, a suspicious timing, internal errors dropped), the verdict mix, the compile-mode
    counts and the reference times."""
    db = tmp_path / "six.db"
    con = sqlite3.connect(db)
    con.executescript((SOURCE_ROOT / "migrations" / "001_init.sql").read_text())
    rows = [  # verdict, mode, speedup stored, result extras, step
        ("correct", "full", 2.0, {"reward_fields": {"speedup": 2.0, "suspicious": False}}, 0),
        ("correct", "full", 15.0, {"reward_fields": {"speedup": 15.0, "suspicious": False}}, 0),
        ("correct", "full", None, {"reward_fields": {"speedup": None, "suspicious": True},
                                   "timing": {"speedup": 40.0, "suspicious": True}}, 0),
        ("incorrect", "full", None, {}, 0),
        ("internal_error", "full", None, {}, 0),
        ("rejected", "full", None, {}, 1),
        ("compile_error", "compile", None, {}, 1),
        ("compiled", "compile", None, {}, 1),
        ("correct", "full", 0.5, {"reward_fields": {"speedup": 0.5, "suspicious": False},
                                  "gpu": {"name": "NVIDIA H100 80GB HBM3", "index": 0},
                                  "timing": {"speedup": 0.5, "shapes": [
                                      {"shape": "default", "reference": {"median_ms": 1.25}},
                                      {"shape": "small", "reference": {"median_ms": 0.5}}]}}, 1),
    ]
    results = []
    for i, (verdict, mode, speedup, extra, step) in enumerate(rows, 1):
        res = {"verdict": verdict, "reward_fields": {"compiled": verdict not in ("compile_error", "rejected"),
                                                     "correct": verdict == "correct", "speedup": None,
                                                     "suspicious": False}}
        res.update({k: v for k, v in extra.items() if k != "reward_fields"})
        res["reward_fields"].update(extra.get("reward_fields", {}))
        results.append(res)
        con.execute("INSERT INTO submissions(id, state, verdict, task, mode, run_id, created_at, finished_at, "
                    "speedup, tags) VALUES (?, 'done', ?, 'six_task', ?, 'six-run', 1000, 1002 + ?, ?, ?)",
                    (i, verdict, mode, i, speedup, json.dumps({"run_id": "six-run", "step": step})))
        con.execute("INSERT INTO submission_results(id, result) VALUES (?, ?)", (i, json.dumps(res)))
    for n in ("002_task_stats", "003_cache_lru", "004_insert_counts", "005_fair_share", "006_dashboard"):
        con.executescript((SOURCE_ROOT / "migrations" / f"{n}.sql").read_text())
    con.execute("PRAGMA user_version = 6")
    con.commit()
    con.close()
    s = make_server(db=db)
    with s.client() as c:
        want = [client_reward(r) for r in results]
        assert want == [2.3, 10.3, 0.0, 0.0, None, 0.0, 0.0, 0.0, 0.8]
        got = [r["reward"] for r in view(s, "SELECT id, reward FROM v_job_metrics ORDER BY id")]
        assert got == pytest.approx(want) and got[4] is None
        d = c.get("/v1/dashboard/run", params={"id": "six-run"}).json()
        s0, s1 = d["steps"]
        assert s0["verdicts"] == {"correct": 3, "incorrect": 1, "internal_error": 1}
        assert s1["verdicts"] == {"rejected": 1, "compile_error": 1, "compiled": 1, "correct": 1}
        assert s0["mean_reward"] == pytest.approx((2.3 + 10.3) / 4) and s1["mean_reward"] == pytest.approx(0.8 / 4)
        assert s1["checked"] == 2 and s1["correct_rate"] == 0.5 and s1["compile_rate"] == 0.5
        assert d["run"]["mode"] == "mixed" and d["run"]["compile_mode"] == 2
        # Reward quantiles through the same formula: step 0 is {0, 0, 2.3, 10.3} (15 capped at 10).
        assert s0["reward"]["p25"] == 0 and s0["reward"]["p75"] == pytest.approx(2.3, rel=0.05)
        assert s0["reward"]["p90"] == pytest.approx(10.3)
        t = c.get("/v1/dashboard/tasks/six_task").json()
        assert "reference_times" in t, t
        refs = {r["shape"]: r for r in t["reference_times"]}
        assert refs["default"]["median_ms_mean"] == 1.25 and refs["small"]["n"] == 1
        assert refs["default"]["gpu_name"] == "NVIDIA H100 80GB HBM3"


def test_trainer_reward(tmp_module):
    """Real results through the dispatcher (the fake GPU worker of test_gpu_scheduling.py): the reward the
    page shows is the client's reward() of each result, step by step; the verdict mix counts each verdict."""
    from test_gpu_scheduling import FakeGpuServer, full
    fs = FakeGpuServer(tmp_module / "reward", gpus="0", per_gpu=1, knobs={"work_s": 0.01}).start()
    try:
        rid = run_id()
        plan = [(0, "correct"), (0, "suspicious"), (0, "incorrect"), (1, "correct"), (1, None), (1, "incorrect")]
        subs = []
        for i, (step, marker) in enumerate(plan):
            sub = full(marker)
            sub["source"] = unique(sub["source"])
            sub["tags"] = {"run_id": rid, "step": step, "sample": i}
            subs.append(sub)
        subs.append(compile_sub(unique(GOOD_KERNEL), tags={"run_id": rid, "step": 1, "sample": 9}))
        subs.append(dict(full(None), source=unique(BROKEN_KERNEL), tags={"run_id": rid, "step": 1, "sample": 10}))
        with fs.server.client() as c:
            done = submit_done(c, subs)
            d = c.get("/v1/dashboard/run", params={"id": rid}).json()
        verdicts = [x["verdict"] for x in done]
        assert verdicts == ["correct", "correct", "incorrect", "correct", "correct", "incorrect", "compiled",
                            "compile_error"], verdicts
        want = [client_reward(x) for x in done]
        assert want == [1.3, 0.0, 0.0, 1.3, 1.3, 0.0, 0.0, 0.0]  # 0.3 + 1.0; the suspicious one earns 0
        got = {r["id"]: r["reward"] for r in view(fs.server, "SELECT id, reward FROM v_job_metrics WHERE run_id = ?",
                                                   rid)}
        assert [got[x["id"]] for x in done] == pytest.approx(want)
        for step in (0, 1):
            mine = [(x, w) for x, w, (st, _) in zip(done, want, plan + [(1, None), (1, None)]) if st == step]
            (row,) = [r for r in d["steps"] if r["step"] == step]
            assert row["mean_reward"] == pytest.approx(sum(w for _, w in mine) / len(mine))
            assert row["verdicts"] == dict(Counter(x["verdict"] for x, _ in mine))
        assert d["run"]["mode"] == "mixed" and d["run"]["checked"] == 7
        assert d["steps"][1]["correct_rate"] == pytest.approx(2 / 4)  # the compile-mode sample is not checked
        # pass@k over the inline task's 7 checked samples, 4 of them correct (the suspicious one is correct).
        (t,) = [t for t in d["tasks"] if t["task"] is not None]
        assert t["samples"] == 7 and t["checked"] == 7 and t["correct"] == 4
        assert t["pass_at_k"] == {"1": pytest.approx(pass_at_k(7, 4, 1)), "5": 1.0, "10": None}
        assert pass_at_k(7, 4, 1) == pytest.approx(4 / 7)
    finally:
        assert fs.stop() == 0


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
