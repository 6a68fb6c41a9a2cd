"""
KernelBench submissions (language "kernelbench", docs/kernelbench.md) end to end: the real
`kevald serve` and kevald-compile, the stand-in kevald-gpu (tests/pylib/standin_gpu_worker.py)
and the stand-in kevald-torch (tests/pylib/standin_torch_worker.py, markers KBV_<x> in the
ModelNew source pick what it reports), over a task library made of the test fixtures' C tasks
and the fixture KernelBench index (tests/fixtures/kernelbench: vadd, which has a C task, and
l1_23_softmax, which has none).

What must hold:
  * the task listing says which tasks take kernelbench submissions, and lists the
    KernelBench-only ones; GET /v1/tasks/{name} serves the KernelBench document;
  * the envelope's faults are 422 with a pointer; the source's are a stored `rejected`;
    a server with torch_workers 0 answers 503;
  * build outcomes (compile, import, no ModelNew, timeout) and run verdicts (correct with
    its speedup, incorrect, runtime_error, timeout) are those the worker reports; the run
    JOB carries the task's shape sets, the build folder and both sources;
  * the build cache: an identical source is built once (its folder is reused);
  * a worker that dies: the job is retried and ends as internal_error after max_attempts,
    and the next job runs on the restarted worker;
  * the GPU's slot is shared: kevald-gpu and kevald-torch jobs on one GPU never overlap;
  * /readyz shows the torch workers; history and /v1/stats count the results.
"""
import json
import os
import shutil
import sys
import time
from pathlib import Path

import httpx
import pytest

import standin_gpu_worker as standin_gpu
import standin_torch_worker as standin_torch
from conftest import (FIXTURE_TASKS, LIBEXEC, SLOW, SOURCE_ROOT, Server, assert_stopped_cleanly, inline_full_sub,
                      problem, wait_done, wait_torch_ready)

KB_FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "kernelbench"

MODEL_NEW = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# {marker} {salt}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)
'''


def model_new(marker="", salt=None):
    return MODEL_NEW.format(marker=f"KBV_{marker}" if marker else "", salt=salt or os.urandom(8).hex())


def kb_sub(marker="", task="l1_23_softmax", salt=None, **extra):
    sub = {"task": task, "language": "kernelbench", "source": model_new(marker, salt)}
    sub.update(extra)
    return sub


class KbServer:
    """A `kevald serve` with one GPU (the stand-in kevald-gpu) and kevald-torch stand-ins."""

    def __init__(self, workdir, args=(), torch_knobs=None):
        self.dir = Path(workdir)
        self.libexec = self.dir / "libexec"
        self.libexec.mkdir(parents=True)
        os.symlink(LIBEXEC / "kevald-compile", self.libexec / "kevald-compile")
        self.gpu_log = standin_gpu.install(self.libexec, {"work_s": 0.05})
        self.torch_log = standin_torch.install(self.libexec, torch_knobs)
        self.tasks = self.dir / "tasks"
        shutil.copytree(FIXTURE_TASKS, self.tasks)
        shutil.copytree(KB_FIXTURES, self.tasks / "kernelbench")
        self.ext = self.dir / "ext"
        self.server = Server(self.dir / "srv", ["--libexec", str(self.libexec), "--gpus", "0",
                                                "--gpu-workers-per-gpu", "1", "--torch-workers", "1",
                                                "--torch-python", sys.executable, "--tasks", str(self.tasks),
                                                "--torch-ext-dir", str(self.ext), *args])

    def start(self):
        self.server.start()
        self.server.wait_ready()
        self.wait_torch_ready()
        return self

    def readyz(self):
        with self.server.client() as c:
            return c.get("/readyz").json()

    def wait_torch_ready(self, timeout=30.0):
        return wait_torch_ready(self.server, timeout, gpu_workers=1)

    def events(self, kind=None, log=None):
        try:
            lines = (log or self.torch_log).read_text().splitlines()
        except FileNotFoundError:
            return []
        evs = [json.loads(x) for x in lines if x.strip()]
        return [e for e in evs if kind is None or e["ev"] == kind]

    def submit(self, subs, status=202):
        with self.server.client() as c:
            r = c.post("/v1/submissions", json={"submissions": subs})
        assert r.status_code == status, r.text
        return r.json()

    def run(self, subs, timeout=30.0):
        ids = self.submit(subs)["ids"]
        with self.server.client() as c:
            return [wait_done(c, i, timeout=timeout) for i in ids]


@pytest.fixture(scope="module")
def kb(tmp_module):
    s = KbServer(tmp_module / "kb", args=["--max-attempts", "2", "--job-timeout-s", "1",
                                          "--compile-workers", "2"]).start()
    yield s
    assert_stopped_cleanly(s.server)


@pytest.fixture(scope="module")
def kbc(kb):
    with kb.server.client() as c:
        yield c


# ---- tasks ----------------------------------------------------------------------

def test_task_listing_says_which_tasks_take_kernelbench(kbc):
    items = {t["name"]: t for t in kbc.get("/v1/tasks").json()["items"]}
    assert items["vadd"]["languages"] == ["cuda", "ptx", "kernelbench"]
    assert items["rownorm"]["languages"] == ["cuda", "ptx"]
    assert items["l1_23_softmax"] == {"name": "l1_23_softmax", "title": "23_Softmax", "level": 1,
                                      "languages": ["kernelbench"]}
    # a category filter leaves out the KernelBench-only tasks (they have no category)
    assert "l1_23_softmax" not in {t["name"] for t in kbc.get("/v1/tasks", params={"category": "x"}).json()["items"]}


def test_task_documents(kbc):
    doc = kbc.get("/v1/tasks/l1_23_softmax").json()
    assert doc["languages"] == ["kernelbench"]
    k = doc["kernelbench"]
    assert k["problem"] == "23_Softmax" and k["c_task"] is None and k["h100_torch_compile_ms"] is None
    assert [s["name"] for s in k["shapes"]] == ["default", "small", "tiny"]
    assert "class Model(nn.Module)" in k["source"]
    # a C task: its own document, and the KernelBench one on request
    assert "buffers" in kbc.get("/v1/tasks/vadd").json()
    assert kbc.get("/v1/tasks/vadd", params={"language": "kernelbench"}).json()["kernelbench"]["c_task"] == "vadd"
    problem(kbc.get("/v1/tasks/rownorm", params={"language": "kernelbench"}), 404)
    assert problem(kbc.get("/v1/tasks/vadd", params={"language": "cuda"}), 422)["pointer"] == "/query/language"


def test_task_check_validates_the_index(kb, tmp_path):
    p = kb.server.kevald("task", "check", "--tasks", str(kb.tasks), check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK   l1_23_softmax" in p.stdout and "OK   vadd" in p.stdout
    bad = tmp_path / "tasks"
    shutil.copytree(kb.tasks, bad)
    idx = json.loads((bad / "kernelbench" / "index.json").read_text())
    softmax = dict(idx["tasks"][1])
    idx["tasks"][1]["module"] = "level1/missing.py"
    idx["tasks"].append(dict(idx["tasks"][0]))               # vadd twice
    idx["tasks"].append({**idx["tasks"][0], "name": "Bad-Name", "c_task": None})
    idx["tasks"].append({**idx["tasks"][0], "name": "l1_24_x", "c_task": None, "problem": "24_X",
                         "shapes": [{"name": "default", "constants": {}}]})
    # problems.json's constants: numbers, booleans, Python expressions, lists of numbers
    idx["tasks"].append({**softmax, "name": "l1_25_conv", "problem": "25_Conv",
                         "shapes": [{"name": "default", "constants": {"N": "2048 * 2", "bias": False,
                                                                      "kernel_size": [3, 5, 7], "k": 1.5}}]})
    idx["tasks"].append({**softmax, "name": "l1_26_conv", "problem": "26_Conv",
                         "shapes": [{"name": "default", "constants": {"x": {"a": 1}}}]})
    (bad / "kernelbench" / "index.json").write_text(json.dumps(idx))
    p = kb.server.kevald("task", "check", "--tasks", str(bad), check=False)
    assert p.returncode == 1
    assert "OK   l1_25_conv" in p.stdout
    assert "/tasks/6/shapes/0/constants/x: constant 'x' must be a finite number" in p.stdout
    assert "/tasks/1/module: module 'level1/missing.py'" in p.stdout
    assert "/tasks/2/name: task 'vadd' is in the index twice" in p.stdout
    assert "/tasks/3/name: 'Bad-Name' is not a task name" in p.stdout
    assert "/tasks/4/shapes/0/constants: a shape set has 1 to" in p.stdout


# ---- acceptance -------------------------------------------------------------------

@pytest.mark.parametrize("sub, pointer", [
    (kb_sub(task="no_such_task"), "/task"),
    (kb_sub(task="rownorm"), "/task"),
    (kb_sub(plan=[]), "/plan"),
    (kb_sub(options=["-O3"]), "/options"),
    (kb_sub(task_spec={}), "/task_spec"),
    (kb_sub(mode="fast"), "/mode"),
    (kb_sub(bogus=1), "/bogus"),
    ({"language": "kernelbench", "source": "class ModelNew: pass"}, "/task"),
])
def test_envelope_faults_are_422(kbc, sub, pointer):
    body = problem(kbc.post("/v1/submissions", json={"submissions": [kb_sub(), sub]}), 422)
    assert body["pointer"] == "/submissions/1" + pointer, body


@pytest.mark.parametrize("source, why", [
    ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "class ModelNew"),
    ("", "empty"),
    ("x = 1  # class ModelNew(nn.Module) only in a comment\n", "class ModelNew"),
])
def test_source_faults_are_rejected(kbc, source, why):
    r = kbc.post("/v1/submissions", json={"task": "l1_23_softmax", "language": "kernelbench", "source": source})
    assert r.status_code == 202, r.text
    assert r.json()["state"] == "done" and r.json()["verdict"] == "rejected"
    res = kbc.get(f"/v1/submissions/{r.json()['id']}").json()["result"]
    assert res["error"]["kind"] == "submission" and res["error"]["pointer"] == "/source"
    assert why in res["error"]["message"]


def test_no_torch_workers_is_503(make_server):
    s = make_server()
    with s.client() as c:
        body = problem(c.post("/v1/submissions", json=kb_sub()), 503)
    assert "torch_workers" in body["detail"]


# ---- verdicts ---------------------------------------------------------------------

def test_run_verdicts_and_the_run_job(kb):
    done = kb.run([kb_sub("s150"), kb_sub("incorrect"), kb_sub("runtime_error"), kb_sub("timeout"),
                   kb_sub(task="vadd")])
    assert [d["result"]["verdict"] for d in done] == ["correct", "incorrect", "runtime_error", "timeout", "correct"]
    assert done[0]["result"]["timing"]["speedup"] == pytest.approx(1.5)
    assert done[0]["result"]["task"] == "l1_23_softmax"
    runs = {e["id"]: e for e in kb.events("run")}
    first = runs[done[0]["id"]]
    assert first["blob_ok"] and first["built"] and first["gpu"] == 0
    assert first["shapes"][2] == {"name": "tiny", "constants": {"batch_size": 4, "dim": 100}, "atol": 1e-4,
                                  "rtol": 1e-4}
    assert {"kind", "seed", "timing", "correctness_trials", "build_dir", "sources"} <= set(first["job_keys"])
    # the run worker reads a view of its own beside the cache (torchview.h), holding only the build's
    # extension: not the cache, not the build's sources
    assert first["build_dir"] == first["env_root"]
    assert first["build_dir"].startswith(str(kb.ext.resolve()) + ".run/v")
    assert first["view"] == ["fake_ext", "fake_ext/fake_ext.so"]
    assert (kb.ext / first["ext_key"] / "model_new.py").is_file()
    assert first["deadline_ms"] == 1000  # job_timeout_s (1 here), at most LIMIT_KB_DEADLINE_MS_MAX
    assert [s["name"] for s in runs[done[4]["id"]]["shapes"]] == ["default", "tiny"]
    # vadd is also a C task: its kernelbench result stays out of the C task's reference times
    assert done[4]["result"].get("task_inline") is True and "task_inline" not in done[0]["result"]


@pytest.mark.parametrize("marker, verdict, kind", [
    ("compile_error", "compile_error", "compile"),
    ("import_error", "compile_error", "compile"),
    ("build_timeout", "compile_error", "compile"),
    ("no_model_new", "rejected", "submission"),
])
def test_build_outcomes(kb, marker, verdict, kind):
    (done,) = kb.run([kb_sub(marker)])
    res = done["result"]
    assert res["verdict"] == verdict and res["error"]["kind"] == kind, res
    assert res["compile"]["ok"] is False and res["compile"]["torch"] == "2.9.0+fake"
    if marker == "compile_error":
        assert "undefined_xq" in res["compile"]["log"]
    assert done["id"] not in {e["id"] for e in kb.events("run")}  # never ran


def test_compile_mode_and_the_build_cache(kb):
    salt = os.urandom(8).hex()
    (a,) = kb.run([kb_sub(salt=salt, mode="compile")])
    assert a["result"]["verdict"] == "compiled" and a["result"]["compile"]["cache_hit"] is False
    (b,) = kb.run([kb_sub(salt=salt)])
    assert b["result"]["verdict"] == "correct" and b["result"]["compile"]["cache_hit"] is True
    keys = [e["key"] for e in kb.events("build")]
    build = next(e for e in kb.events("build") if e["id"] is not None and e["key"] ==
                 {e["id"]: e for e in kb.events("run")}[b["id"]]["ext_key"])
    assert build["arch"] == "sm_90a" and build["deadline_ms"] == 300000
    run = {e["id"]: e for e in kb.events("run")}[b["id"]]
    key = run["ext_key"]
    assert keys.count(key) == 1, "an identical source was built again"
    assert run["built"]  # the run found what the one build left


def test_identical_sources_in_one_batch_build_once(kb):
    salt = os.urandom(8).hex()
    done = kb.run([kb_sub(salt=salt), kb_sub(salt=salt), kb_sub(salt=salt)])
    assert [d["result"]["verdict"] for d in done] == ["correct"] * 3
    keys = {e["ext_key"] for e in kb.events("run") if e["id"] in {d["id"] for d in done}}
    assert len(keys) == 1 and [e["key"] for e in kb.events("build")].count(keys.pop()) == 1


def test_a_worker_that_dies(kb):
    before = {e["pid"] for e in kb.events("hello") if e["role"] == "run"}
    (dead,) = kb.run([kb_sub("run_die")])
    assert dead["result"]["verdict"] == "internal_error", dead["result"]
    assert sum(1 for e in kb.events("run") if e["id"] == dead["id"]) == 2  # max_attempts 2
    (ok,) = kb.run([kb_sub()])
    assert ok["result"]["verdict"] == "correct"
    run_pid = {e["id"]: e["pid"] for e in kb.events("run")}[ok["id"]]
    assert run_pid not in before
    (bdead,) = kb.run([kb_sub("build_die")])
    assert bdead["result"]["verdict"] == "internal_error"
    assert "failed on this source on every attempt" in bdead["result"]["error"]["message"]


def test_a_run_workers_view_goes_with_it(kb):
    """Each run worker process reads a view of its own (KEVALD_TORCH_EXT_ROOT), made empty before it
    starts and filled, when a job is sent, with that job's extension alone (a second job on the same
    process replaces the first's); the view is removed when its process exits (the real worker exits
    after every job; the stand-in after a CUDA error), and no two processes share one."""
    done = kb.run([kb_sub(), kb_sub()])
    assert [d["result"]["verdict"] for d in done] == ["correct"] * 2
    runs = [{e["id"]: e for e in kb.events("run")}[d["id"]] for d in done]
    assert runs[0]["ext_key"] != runs[1]["ext_key"]
    assert all(r["view"] == ["fake_ext", "fake_ext/fake_ext.so"] for r in runs)
    (err,) = kb.run([kb_sub("runtime_error")])  # the stand-in exits 3 after it
    assert err["result"]["verdict"] == "runtime_error"
    view = Path({e["id"]: e for e in kb.events("run")}[err["id"]]["build_dir"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and view.exists():
        time.sleep(0.05)
    assert not view.exists(), "an exited worker's view is still there"
    views = Path(str(kb.ext.resolve()) + ".run")
    roots = [e["env"].get("KEVALD_TORCH_EXT_ROOT", "") for e in kb.events("hello") if e["role"] == "run"]
    assert len(roots) >= 2 and all(r.startswith(str(views) + "/v") for r in roots), roots
    assert len(set(roots)) == len(roots), "two run worker processes were given one view"


def test_a_forbidden_system_call_is_the_candidates(kb):
    """A run worker that exits 5 (worker/exitcode.h: its system-call filter ended it while the candidate's
    code ran, as a Triton kernel compiling at its first call forks ptxas) ends its job as a runtime_error
    of kind sandbox at once, not retried; one killed by SIGSYS (the call was the worker's own, or the
    reference's) is an infrastructure fault: retried, then internal_error."""
    log0 = len(kb.server.log_text())
    done = kb.run([kb_sub("run_forbidden") for _ in range(3)])
    assert [x["result"]["verdict"] for x in done] == ["runtime_error"] * 3
    # the candidate's doing, not the worker failing: no backoff, however many in a row
    assert "torch-run worker 0 in" not in kb.server.log_text()[log0:]
    d = done[0]
    assert d["result"]["error"]["kind"] == "sandbox"
    assert "system call the run stage's sandbox forbids" in d["result"]["error"]["message"]
    assert sum(1 for e in kb.events("run") if e["id"] == d["id"]) == 1
    assert "ended by its system-call filter" in kb.server.log_text()
    (s,) = kb.run([kb_sub("run_sigsys")])
    assert s["result"]["verdict"] == "internal_error", s["result"]
    assert sum(1 for e in kb.events("run") if e["id"] == s["id"]) == 2  # max_attempts 2
    (ok,) = kb.run([kb_sub()])
    assert ok["result"]["verdict"] == "correct"


@pytest.mark.parametrize("marker", ["wrong_id", "forged_speedup"])
def test_a_run_result_is_checked(kb, marker):
    """A kevald-torch RESULT goes through the GPU RESULT's checks: one that names another job, or
    states a speedup its medians do not back, kills the worker; after max_attempts (2) the job is an
    internal_error, never the RESULT's verdict."""
    (d,) = kb.run([kb_sub(marker)])
    assert d["result"]["verdict"] == "internal_error", d["result"]
    assert "RESULT was invalid on every attempt" in d["result"]["error"]["message"]
    assert sum(1 for e in kb.events("run") if e["id"] == d["id"]) == 2
    assert "sent an invalid RESULT" in kb.server.log_text()
    (ok,) = kb.run([kb_sub()])
    assert ok["result"]["verdict"] == "correct"


def test_a_hung_run_is_a_timeout(kb):
    (h,) = kb.run([kb_sub("hang")], timeout=30)
    assert h["result"]["verdict"] == "timeout"
    assert "did not finish" in h["result"]["error"]["message"]


def test_the_gpu_slot_is_shared(kb):
    subs = []
    for i in range(6):
        subs.append(kb_sub())
        subs.append(inline_full_sub())
    done = kb.run(subs)
    assert all(d["result"]["verdict"] == "correct" for d in done), [d["result"] for d in done]
    ids = {d["id"] for d in done}
    spans = [(e["start"], e["end"]) for e in kb.events("run") if e["id"] in ids]
    spans += [(e["start"], e["end"]) for e in kb.events("job", log=kb.gpu_log) if e["id"] in ids]
    assert len(spans) == 12
    spans.sort()
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        assert s1 >= e0, "two jobs ran on GPU 0 at once"


def test_readyz_shows_the_torch_workers(kb):
    body = kb.readyz()
    t = body["torch"]
    assert t["workers_per_gpu"] == 1 and t["torch"] == "2.9.0+fake"
    # torch_build_workers 0: half as many again as compile workers (2)
    assert t["build"]["configured"] == 3 and len(t["build"]["workers"]) == 3, t["build"]
    assert t["build"]["workers"][0]["role"] == "torch-build"
    (run,) = t["run"]
    assert run["gpu"] == 0 and run["role"] == "torch-run" and run["name"] == "Fake GPU (kevald tests)"
    assert body["layers"]["torch-run"]["sandbox"]["active"] is False
    assert body["layers"]["torch-build"]["sandbox"]["detail"].startswith("fake kevald-torch")
    hello = [e for e in kb.events("hello") if e["role"] == "run"][0]
    assert hello["argv"] == ["--role", "run"]
    assert hello["env"]["KEVALD_GPU_INDEX"] == "0" and hello["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert hello["env"]["KEVALD_TORCH_EXT_ROOT"].startswith(str(kb.ext.resolve()) + ".run/v")  # its view
    build = [e for e in kb.events("hello") if e["role"] == "build"][0]
    assert build["env"]["KEVALD_TORCH_EXT_ROOT"] == str(kb.ext.resolve())
    assert hello["env"]["KEVALD_CONFINE_LIB"] == str(kb.libexec.resolve() / "libkevald-confine.so")


def test_history_and_stats_count_them(kb, kbc):
    n = len(kb.run([kb_sub("s200"), kb_sub("incorrect"), kb_sub(source="x = 1\n")]))
    items = kbc.get("/v1/submissions", params={"task": "l1_23_softmax", "limit": 1000}).json()["items"]
    verdicts = [i.get("verdict") for i in items]
    assert verdicts.count("correct") >= 2 and verdicts.count("incorrect") >= 1 and len(items) >= n
    tasks = kbc.get("/v1/stats").json()["tasks"]
    row = tasks.get("l1_23_softmax") if isinstance(tasks, dict) else next(
        t for t in tasks if t.get("task") == "l1_23_softmax" or t.get("name") == "l1_23_softmax")
    assert row, tasks
    dash = kbc.get("/v1/dashboard/tasks/l1_23_softmax")
    assert dash.status_code == 200, dash.text
    d = dash.json()
    assert d["summary"]["submissions"] == row["submissions"] >= n and d["summary"]["correct"] == row["correct"]
    assert {v["verdict"] for v in d["verdicts"]} >= {"correct", "incorrect", "rejected"}
    assert {r["shape"] for r in d["reference_times"]} == {"default", "small", "tiny"}
    vadd = kbc.get("/v1/dashboard/tasks/vadd").json()
    assert not vadd["reference_times"]  # no kevald-gpu job of the C task ran: the kernelbench ones are left out


def test_answers_match_the_openapi_document(kb, kbc, make_server):
    from test_openapi import SCHEMA_DIR, Checker, Registry, find_operation  # noqa: F401
    api = json.loads((SCHEMA_DIR / "openapi.json").read_text())
    ck = Checker(api, Registry(SCHEMA_DIR), kbc)
    val = ck.val
    body_schema = api["paths"]["/v1/submissions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    for good in (kb_sub(), kb_sub(mode="compile", timing="fast", priority="interactive")):
        assert not val.errors(good, body_schema, "openapi.json"), val.errors(good, body_schema, "openapi.json")
    for bad in (kb_sub(plan=[]), {"language": "kernelbench", "source": "class ModelNew: pass"},
                kb_sub(options=["-O3"]), kb_sub(shapes=["tiny"])):
        assert val.errors(bad, body_schema, "openapi.json"), f"schema accepts {bad}"
    sid = ck.check("post", "/v1/submissions", json=kb_sub("s300")).json()["id"]
    ck.check("post", "/v1/submissions", json=kb_sub(plan=[]))
    rej = ck.check("post", "/v1/submissions", json=kb_sub(source="x = 1\n"))
    assert rej.status_code == 202 and rej.json()["verdict"] == "rejected"
    wait_done(kbc, sid)
    ck.check("get", f"/v1/submissions/{sid}")
    (ce,) = kb.run([kb_sub("compile_error")])
    ck.check("get", f"/v1/submissions/{ce['id']}")
    for p in ("/v1/tasks", "/v1/tasks?level=1", "/v1/tasks/l1_23_softmax", "/v1/tasks/vadd?language=kernelbench",
              "/v1/tasks/vadd", "/v1/tasks/rownorm?language=kernelbench", "/v1/tasks/vadd?language=x", "/readyz"):
        ck.check("get", p)
    plain = make_server()
    with plain.client() as c:
        Checker(api, Registry(SCHEMA_DIR), c).check("post", "/v1/submissions", json=kb_sub())
    assert not ck.failures, "\n".join(ck.failures)


# ---- kevald kernelbench ----------------------------------------------------------

def test_kevald_kernelbench_scores_a_runs_folder(kb, tmp_path):
    runs = tmp_path / "runs" / "my_run"
    runs.mkdir(parents=True)
    gens = {
        "level_1_problem_23_sample_0_kernel.py": model_new("s200") + "# KBC_150\n",
        "level_1_problem_23_sample_1_kernel.py": model_new("incorrect"),   # listed, not scored
        "level_1_problem_901_sample_0_kernel.py": model_new("incorrect"),  # vadd
        "level_1_problem_999_sample_0_kernel.py": model_new(),             # no such task
        "level_2_problem_5_sample_0_kernel.py": model_new(),               # another level
        "README.txt": "not a generation",
    }
    for name, text in gens.items():
        (runs / name).write_text(text)
    out = tmp_path / "report.json"
    p = kb.server.kevald("kernelbench", str(runs), "--level", "1", "--server", kb.server.url, "--out", str(out),
                         check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "torch eager" in p.stdout and "fast_1.5" in p.stdout and "torch.compile" in p.stdout
    assert "33.3%" in p.stdout
    report = json.loads(out.read_text())
    assert report["run_id"] == "kernelbench-my_run"
    (lv,) = report["levels"]
    assert lv["level"] == 1 and lv["problems"] == 3 and lv["problems_with_compile_baseline"] == 1
    third = pytest.approx(1 / 3)
    assert lv["fast_p"]["eager"] == {"0": third, "0.5": third, "0.8": third, "1": third, "1.5": third, "2": 0}
    assert lv["fast_p"]["compile"] == {"0": third, "0.5": third, "0.8": third, "1": third, "1.5": 0, "2": 0}
    rows = {(r["problem"], r["sample"]): r for r in lv["rows"]}
    assert len(rows) == 4
    assert rows[(23, 0)]["verdict"] == "correct" and rows[(23, 0)]["speedup_eager"] == pytest.approx(2.0)
    assert rows[(23, 0)]["speedup_compile"] == pytest.approx(1.5) and rows[(23, 0)]["scored"]
    assert rows[(23, 1)]["verdict"] == "incorrect" and not rows[(23, 1)]["scored"]
    assert rows[(901, 0)]["task"] == "vadd" and rows[(901, 0)]["verdict"] == "incorrect"
    assert rows[(999, 0)]["task"] is None and rows[(999, 0)]["id"] is None and "no KernelBench task" in rows[(999, 0)]["error"]
    # the submissions are the run's, in the history
    with kb.server.client() as c:
        items = c.get("/v1/submissions", params={"run_id": "kernelbench-my_run"}).json()["items"]
    assert len(items) == 3
    assert rows[(23, 0)]["compile_baseline"] == "measured" and rows[(901, 0)]["compile_baseline"] is None
    # --published-h100: where no result measured torch.compile, the task's published H100 time against
    # the candidate's median at KernelBench's sizes (vadd: 0.03 ms / (0.5 ms / 2))
    runs2 = tmp_path / "runs2"
    runs2.mkdir()
    (runs2 / "level_1_problem_901_sample_0_kernel.py").write_text(model_new("s200"))
    (runs2 / "level_1_problem_23_sample_0_kernel.py").write_text(model_new("s300"))  # softmax: none published
    for flag, want in (([], None), (["--published-h100"], 0.12)):
        p = kb.server.kevald("kernelbench", str(runs2), "--server", kb.server.url, "--json", *flag, check=False)
        assert p.returncode == 0, p.stderr
        (lv2,) = json.loads(p.stdout)["levels"]
        r2 = {r["problem"]: r for r in lv2["rows"]}
        assert r2[901]["speedup_eager"] == pytest.approx(2.0) and r2[23]["speedup_compile"] is None
        if want is None:
            assert r2[901]["speedup_compile"] is None and lv2["fast_p"]["compile"] is None
        else:
            assert r2[901]["speedup_compile"] == pytest.approx(want) and r2[901]["compile_baseline"] == "published-h100"
            assert lv2["fast_p"]["compile"]["0"] == pytest.approx(0.5) and lv2["fast_p"]["compile"]["0.5"] == 0
    # --json prints the same report; a folder without generations is a usage error
    p = kb.server.kevald("kernelbench", str(runs), "--level", "1", "--server", kb.server.url, "--json", check=False)
    assert p.returncode == 0 and json.loads(p.stdout)["levels"][0]["problems"] == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    p = kb.server.kevald("kernelbench", str(empty), "--server", kb.server.url, check=False)
    assert p.returncode == 64 and "no level_<L>_problem_<P>_sample_<S>_kernel.py" in p.stderr


def test_a_stream_of_cuda_jobs_does_not_starve_a_kernelbench_job(kb):
    """With gpu_prefetch, a busy kevald-gpu worker claims the next job into its pipe; a kernelbench
    job it claims waits for the GPU's kevald-torch worker, and no CUDA job is queued meanwhile."""
    cuda = kb.submit([inline_full_sub() for _ in range(40)])["ids"]
    deadline = time.monotonic() + 20 * SLOW
    while not any(e["id"] in cuda for e in kb.events("job", log=kb.gpu_log)):
        assert time.monotonic() < deadline, "no CUDA job started"
        time.sleep(0.01)
    (kid,) = kb.submit([kb_sub(priority="interactive")])["ids"]
    with kb.server.client() as c:
        done = wait_done(c, kid, timeout=30)
        assert done["result"]["verdict"] == "correct"
        for i in cuda:
            wait_done(c, i, timeout=60)
    run = {e["id"]: e for e in kb.events("run")}[kid]
    ends = sorted(e["end"] for e in kb.events("job", log=kb.gpu_log) if e["id"] in cuda)
    assert len(ends) == 40
    # it ran while CUDA jobs were still to run: at most a few of them (the ones already in flight) went first
    after = sum(1 for t in ends if t > run["end"])
    assert after >= 20, f"the kernelbench job waited behind {40 - after} CUDA jobs"


@pytest.mark.parametrize("role", ["build", "run"])
def test_a_torch_pool_that_cannot_start_ends_its_jobs(tmp_path, role):
    """kevald-torch without PyTorch says so in its HELLO and exits 1: once every worker of a pool has
    failed its starts (5 each, with backoff), the kernelbench jobs waiting for that pool end as
    internal_error naming the worker's error rather than wait; CUDA work goes on."""
    s = KbServer(tmp_path / "nt", torch_knobs={"hello_fail": role})
    s.server.start()
    try:
        s.server.wait_ready()
        with s.server.client() as c:
            r = c.post("/v1/submissions", json=kb_sub())
            assert r.status_code == 202, r.text
            done = wait_done(c, r.json()["id"], timeout=40)
            body = c.get("/readyz").json()
            cuda = wait_done(c, c.post("/v1/submissions", json=inline_full_sub()).json()["id"], timeout=30)
        assert done["result"]["verdict"] == "internal_error"
        msg = done["result"]["error"]["message"]
        assert f"no kevald-torch {role} worker could start" in msg and "import: fake: no torch" in msg
        assert cuda["result"]["verdict"] == "correct"
        if role == "build":
            assert body["torch"]["build"]["failed"] == 1 and body["torch"]["torch"] is None
            assert all(e["ev"] != "build" for e in s.events())
        else:
            assert body["torch"]["run"][0]["state"] == "failed" and body["torch"]["torch"] == "2.9.0+fake"
            assert done["result"]["compile"]["ok"] is True and not s.events("run")
    finally:
        assert_stopped_cleanly(s.server)


def test_a_build_whose_folder_is_gone_is_built_again(kb):
    """A build cache entry counts only while its folder exists (the prune removes the least recently
    used folders): the same source is built again, into the same folder."""
    salt = os.urandom(8).hex()
    (a,) = kb.run([kb_sub(salt=salt, mode="compile")])
    key = kb.events("build")[-1]["key"]  # its build: the last one (one build worker, nothing else queued)
    assert kb.events("build")[-1]["marker"] == "correct" and (kb.ext / key / "fake_ext" / "fake_ext.so").exists()
    shutil.rmtree(kb.ext / key)
    (b,) = kb.run([kb_sub(salt=salt)])
    assert b["result"]["verdict"] == "correct" and b["result"]["compile"]["cache_hit"] is False
    assert [e["key"] for e in kb.events("build")].count(key) == 2
    assert {e["id"]: e for e in kb.events("run")}[b["id"]]["built"]
