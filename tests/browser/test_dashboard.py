"""
The built-in dashboard in a real browser (headless Chromium from Debian's
chromium package, driven over the DevTools protocol) against the real
`kevald serve` holding real results:

  * compile-mode results from the real compile worker (NVRTC on this CPU
    machine): an agent's three turns (a compile error, then two fixes) and
    compile errors inside an RL run;
  * run-stage results from a CPU STAND-IN for kevald-gpu
    (tests/pylib/standin_gpu_worker.py: the real frame protocol, no GPU; each
    of its results says "stand-in", and the page badges it). Its speedups and
    mismatches are made up by the stand-in; what is tested is that the page
    shows what the API says about them.

Each view must load, show the figures the JSON routes return (the test reads
the API itself and formats the numbers as app.js does), draw its charts, log
no console error, and leave a screenshot under
<build>/tests/browser/screenshots/. A server that requires a token (auth on)
must make the page ask for one and send it as a header, never in the URL.

The RL researcher's views (issue 24): a run's reward is the trainer's (the
Python client's default reward() of each result, averaged per step), each
step shows its verdict mix, a compile-only run shows its compile rate and no
correct rate, and the task browser lists the whole library in natural order
with descriptions, shapes, the published PyTorch times and the reference
times kevald measured (here: the stand-in's, for a library task).

Exits 77 (meson: skipped) only when Chromium cannot start here.
"""
import copy
import json
import os
import sys
import time
import uuid
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from urllib.parse import quote

import pytest

import standin_gpu_worker as standin
from cdp import Browser, BrowserUnavailable
from conftest import LIBEXEC, SCREENSHOTS, SLOW, Server, assert_stopped_cleanly

HERE = Path(__file__).resolve().parent
# The stand-in's knobs: its results say they are a stand-in's (the page badges them).
STANDIN = {"work_s": 0.01, "name": "CPU stand-in (kevald browser tests; no GPU ran this)", "standin": True}

RUN_RL = "rl-standin"
RUN_AGENT = "agent-compile"
LIB_TASK = "l1_19_relu"  # a library task the stand-in "times" (its reference times show on the task page)
PROJECT_ROOT = HERE.parent.parent

sys.path.insert(0, str(PROJECT_ROOT / "clients" / "python"))
from kevald.reward import reward as client_reward  # noqa: E402


def task(name, expr):
    return {
        "name": name, "title": name, "description": f"c = {expr}", "level": 1, "category": "elementwise",
        "params": {"N": "length"},
        "shapes": [{"name": "default", "N": 4096}, {"name": "odd", "N": 1001}],
        "buffers": [
            {"name": "a", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
            {"name": "b", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
            {"name": "c", "dtype": "f32", "shape": ["N"], "role": "out"},
        ],
        "reference": {
            "source": f'extern "C" __global__ void ref(const float *a, const float *b, float *c, int n)'
                      f' {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = {expr}; }}',
            "plan": [{"kernel": "ref", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                      "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}],
        },
    }


TASKS = {"br_vecadd": task("br_vecadd", "a[i] + b[i]"), "br_vecmul": task("br_vecmul", "a[i] * b[i]")}
EXPR = {"br_vecadd": "a[i] + b[i]", "br_vecmul": "a[i] * b[i]"}


def full(task_name, marker, tags):
    """A full submission whose kernel name carries the stand-in's marker (s150: correct at 1.50x; bad)."""
    k = f"cand_FAKEV_{marker}"
    src = (f'extern "C" __global__ void {k}(const float *a, const float *b, float *c, int n)'
           f' {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = {EXPR[task_name]}; }}')
    return {"mode": "full", "task_spec": copy.deepcopy(TASKS[task_name]), "source": src, "tags": tags,
            "plan": [{"kernel": k, "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                      "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}]}


def library_full(marker, tags):
    """A full submission to the library task LIB_TASK: its own reference, renamed to carry the stand-in's marker."""
    spec = json.loads((PROJECT_ROOT / "tasks" / "level1" / "activation" / f"{LIB_TASK}.json").read_text())
    k = f"cand_FAKEV_{marker}"
    src = (PROJECT_ROOT / "tasks" / "level1" / "activation" / spec["reference"]["source_file"]).read_text()
    plan = copy.deepcopy(spec["reference"]["plan"])
    ref = plan[0]["kernel"]
    plan[0]["kernel"] = k
    return {"mode": "full", "task": LIB_TASK, "source": src.replace(ref, k), "plan": plan, "tags": tags}


BROKEN = 'extern "C" __global__ void turn0(float *y, int n)\n{\n        y[0] = missing_name;\n}\n'
FIXED = 'extern "C" __global__ void turn{t}(float *y, int n)\n{{\n        if (n > 0) y[0] = {v}.0f;\n}}\n'


# ---- formatting, as app.js does it ----------------------------------------

def _fixed(v, digits):
    q = Decimal(1).scaleb(-digits)
    return str(Decimal(v).quantize(q, rounding=ROUND_HALF_UP))


def fmt_int(v):
    return "–" if v is None else str(int(Decimal(v).quantize(Decimal(1), rounding=ROUND_HALF_UP)))


def fmt_pct(v):
    return "–" if v is None else _fixed(v * 100, 1) + "%"


def fmt_x(v):
    return "–" if v is None else _fixed(v, 2) + "×"


def mix_text(mix):
    """A step's verdict mix as app.js writes it: most frequent first, ties by name."""
    return " · ".join(f"{k} {n}" for k, n in sorted(mix.items(), key=lambda kv: (-kv[1], kv[0])))


def fmt_ms(v):
    if v is None:
        return "–"
    return (_fixed(v, 4) if v < 0.1 else _fixed(v, 3) if v < 10 else _fixed(v, 1)) + " ms"


# ---- fixtures ---------------------------------------------------------------

def libexec_with_standin(d):
    libexec = d / "libexec"
    libexec.mkdir(parents=True)
    compile_bin = LIBEXEC / "kevald-compile"
    if not compile_bin.exists():
        pytest.fail(f"no kevald-compile at {compile_bin} (build first)")
    os.symlink(compile_bin, libexec / "kevald-compile")
    standin.install(libexec, STANDIN)
    return libexec


@pytest.fixture(scope="module")
def browser(tmp_module):
    try:
        b = Browser(tmp_module / "chromium")
    except BrowserUnavailable as e:
        print(f"SKIP: headless Chromium cannot start here: {e}")
        pytest.exit(f"headless Chromium cannot start here: {e}", returncode=77)
    yield b
    b.close()


@pytest.fixture(scope="module")
def filled(tmp_module):
    """A server with a stand-in GPU worker and the project's task library, filled with compile-mode and
    stand-in results."""
    libexec = libexec_with_standin(tmp_module / "srv")
    # The project's task library (the browser lists it; LIB_TASK is in it).
    s = Server(tmp_module / "srv", ["--libexec", str(libexec), "--gpus", "0", "--gpu-workers-per-gpu", "1",
                                    "--tasks", str(PROJECT_ROOT / "tasks")]).start()
    s.wait_ready()
    ids = {}
    with s.client() as c:
        # An agent's turns, compile mode, real NVRTC: an error, then two fixes.
        tag = uuid.uuid4().hex[:8]
        r = c.post("/v1/submissions?wait=60", json={"mode": "compile", "source": f"// {tag}\n" + BROKEN,
                                                    "tags": {"run_id": RUN_AGENT, "step": 0, "turn": 0}})
        assert r.status_code == 200, r.text
        ids["turn0"] = r.json()["id"]
        prev = ids["turn0"]
        for t in (1, 2):
            r = c.post("/v1/submissions?wait=60",
                       json={"mode": "compile", "source": f"// {tag}\n" + FIXED.format(t=t, v=t),
                             "tags": {"run_id": RUN_AGENT, "step": t, "turn": t, "parent": prev}})
            assert r.status_code == 200, r.text
            prev = ids[f"turn{t}"] = r.json()["id"]
        # An RL run: 4 steps x (2 tasks x 3 samples + a compile error), run stage on the stand-in.
        subs = []
        speeds = [[80, 100, 120], [90, 130, 160], [110, 150, 210], [120, 180, 260]]
        for step in range(4):
            for tn in TASKS:
                for i, sp in enumerate(speeds[step]):
                    marker = "bad" if (i == 0 and step % 2 == 0) else f"s{sp + (7 if tn == 'br_vecmul' else 0)}"
                    subs.append(full(tn, marker, {"run_id": RUN_RL, "step": step, "sample": len(subs)}))
            subs.append({"mode": "compile", "source": f"// {tag} {step}\n" + BROKEN,
                         "tags": {"run_id": RUN_RL, "step": step, "sample": len(subs)}})
        # Step 3 also holds a kernel timed at 15x (the trainer's reward caps the speedup at 10).
        subs.append(full("br_vecadd", "s1500", {"run_id": RUN_RL, "step": 3, "sample": len(subs)}))
        # A library task, timed by the stand-in (its reference medians reach the task page).
        subs.append(library_full("s125", {"sample": 0}))
        r = c.post("/v1/submissions", json={"submissions": subs})
        assert r.status_code == 202, r.text
        rl = r.json()["ids"]
        deadline = time.monotonic() + 180 * SLOW
        for sid in rl:
            while True:
                body = c.get(f"/v1/submissions/{sid}", params={"wait": 10}).json()
                if body["state"] == "done":
                    break
                assert time.monotonic() < deadline, f"{sid} not done: {body}\n{s.log_tail()}"
        done = [c.get(f"/v1/submissions/{sid}").json() for sid in rl]
        assert done[-1]["verdict"] == "correct" and done[-1]["task"] == LIB_TASK, done[-1]
        ids["library"] = done.pop()["id"]
        ids["rl"] = [d["id"] for d in done]
        verdicts = {d["verdict"] for d in done}
        assert {"correct", "incorrect", "compile_error"} <= verdicts, verdicts
        for d in done:
            if d["verdict"] in ("correct", "incorrect"):
                assert d["result"]["gpu"]["standin"] is True, d  # run-stage results are the stand-in's
        ids["correct"] = max((d for d in done if d["verdict"] == "correct" and d["speedup"] < 10),
                             key=lambda d: d["speedup"])["id"]
        ids["incorrect"] = next(d["id"] for d in done if d["verdict"] == "incorrect")
        ids["rl_compile_error"] = next(d["id"] for d in done if d["verdict"] == "compile_error")
    yield s, ids
    assert_stopped_cleanly(s)


# ---- helpers ----------------------------------------------------------------

def open_view(browser, server, frag, name):
    """Load #frag, wait until the page says it is ready, save its screenshot; the figures it shows."""
    before = len(browser.errors)
    browser.goto(f"{server.url}/#{frag}")
    browser.wait_for("document.body.getAttribute('data-ready') === '1' && "
                     f"document.body.getAttribute('data-hash') === {('#' + frag)!r}", timeout=30 * SLOW)
    # Let uPlot draw (it paints on the next animation frame).
    browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    shot = browser.screenshot(SCREENSHOTS / f"{name}.png")
    assert shot.stat().st_size > 10000, shot
    assert browser.errors[before:] == [], browser.errors[before:]
    return figures(browser)


def figures(browser):
    """The text of every element carrying data-fig that is not inside a table row: {name: text}."""
    return browser.evaluate("""Object.fromEntries([...document.querySelectorAll('[data-fig]')]
        .filter(e => !e.closest('tr')).map(e => [e.dataset.fig, e.textContent.trim()]))""")


def cell(browser, row_selector, fig):
    return browser.evaluate(f"(() => {{ const e = document.querySelector({row_selector!r} + ' [data-fig=\"{fig}\"]');"
                            " return e ? e.textContent.trim() : null; })()")


def charts(browser):
    return browser.evaluate("document.querySelectorAll('.uplot canvas').length")


def api(server, path, **params):
    with server.client() as c:
        r = c.get(path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


# ---- the views ----------------------------------------------------------------

def test_now(browser, filled):
    server, _ = filled
    figs = open_view(browser, server, "/now", "now")
    d = api(server, "/v1/dashboard/now", window=60)
    for k in ("queued", "compiling", "compiled", "running"):
        assert figs[f"queue.{k}"] == fmt_int(d["queue"][k]), (k, figs, d["queue"])
    assert figs["totals.submissions"] == fmt_int(d["totals"]["submissions"])
    assert d["totals"]["submissions"] == 3 + 4 * 7 + 2
    assert figs["cache.hit_rate"] == fmt_pct(d["cache"]["hit_rate"])
    assert d["cache"]["hits"] > 0  # the same candidates recur across steps
    restarts = d["workers"]["compile"]["restarts"] + sum(g["restarts"] for g in d["workers"]["gpus"])
    assert figs["restarts.total"] == fmt_int(restarts)
    ev = sum(d["series"]["evaluations"])
    assert ev == 3 + 4 * 7 + 2
    assert figs["evaluations.per_min"] == _fixed(ev / d["window_minutes"], 1)
    assert d["workers"]["gpus"] and d["series"]["gpu_busy_fraction"]["0"], d
    assert cell(browser, 'tr[data-verdict="correct"]', "verdict.n") == fmt_int(d["totals"]["by_verdict"]["correct"])
    assert charts(browser) >= 4


def test_runs_and_run(browser, filled):
    server, _ = filled
    open_view(browser, server, "/runs", "runs")
    runs = api(server, "/v1/dashboard/runs")["items"]
    assert {r["run_id"] for r in runs} == {RUN_RL, RUN_AGENT}
    for r in runs:
        sel = f'tr[data-run="{r["run_id"]}"]'
        assert cell(browser, sel, "run.evaluated") == fmt_int(r["evaluated"])
        assert cell(browser, sel, "run.correct_rate") == fmt_pct(r["correct_rate"])
        assert cell(browser, sel, "run.compile_rate") == fmt_pct(r["compile_rate"])
    agent = next(r for r in runs if r["run_id"] == RUN_AGENT)
    assert agent["correct_rate"] is None and agent["compile_rate"] == pytest.approx(2 / 3)
    assert cell(browser, f'tr[data-run="{RUN_AGENT}"]', "run.mode") == "compile-only"
    assert cell(browser, f'tr[data-run="{RUN_AGENT}"]', "run.correct_rate") == "–"  # never "0.0%"
    assert cell(browser, f'tr[data-run="{RUN_RL}"]', "run.mode") == "mixed"

    figs = open_view(browser, server, f"/run/{quote(RUN_RL)}", "run")
    d = api(server, "/v1/dashboard/run", id=RUN_RL)
    run = d["run"]
    assert run["evaluated"] == 4 * 7 + 1 and run["correct"] == 4 * 6 - 2 * 2 + 1
    assert run["mode"] == "mixed" and run["checked"] == 4 * 6 + 1  # the compile-mode errors are not checked
    assert figs["run.id"] == RUN_RL and figs["run.mode"] == "mixed"
    assert figs["run.evaluated"] == fmt_int(run["evaluated"])
    assert figs["run.correct"] == fmt_int(run["correct"])
    assert figs["run.correct_rate"] == fmt_pct(run["correct_rate"])
    assert figs["run.compile_rate"] == fmt_pct(run["compile_rate"])
    assert figs["run.steps"] == "0–3"
    assert [s["step"] for s in d["steps"]] == [0, 1, 2, 3]
    # The trainer's reward: the client's reward() of each result, averaged per step (15x capped at 10).
    with server.client() as c:
        results = [c.get(f"/v1/submissions/{i}").json() for i in filled[1]["rl"]]
    for s in d["steps"]:
        mine = [x for x in results if x["tags"]["step"] == s["step"]]
        rewards = [client_reward(x) for x in mine]
        assert s["mean_reward"] == pytest.approx(sum(rewards) / len(rewards))
        assert s["verdicts"] == dict(Counter(x["verdict"] for x in mine))
        sel = f'tr[data-step="{s["step"]}"]'
        assert cell(browser, sel, "step.correct_rate") == fmt_pct(s["correct_rate"])
        assert cell(browser, sel, "step.compile_rate") == fmt_pct(s["compile_rate"])
        assert cell(browser, sel, "step.mean_reward") == _fixed(s["mean_reward"], 3)
        assert cell(browser, sel, "step.verdicts") == mix_text(s["verdicts"])
    assert max(client_reward(x) for x in results) == pytest.approx(10.3)
    assert d["steps"][3]["reward"]["p90"] == pytest.approx(10.3)
    assert {t["task"] for t in d["tasks"]} == {"br_vecadd", "br_vecmul", None}
    for t in d["tasks"]:
        sel = f'tr[data-task="{t["task"] or ""}"]'
        assert cell(browser, sel, "task.samples") == fmt_int(t["samples"])
        for k in d["k"]:
            assert cell(browser, sel, f"pass@{k}") == fmt_pct(t["pass_at_k"][str(k)])
        assert cell(browser, sel, "task.best") == fmt_x(t["best_speedup"])
    best = next(t for t in d["tasks"] if t["task"] == "br_vecmul")
    assert best["best_speedup"] == pytest.approx(2.67) and best["best_step"] == 3
    assert charts(browser) >= 4  # correct and compile rate, verdicts, reward, speedup per step
    assert browser.evaluate("!!document.querySelector('[data-chart=\"step-verdicts\"] .uplot')")

    # The agent's compile-only run: its compile rate, no correct rate, no reward chart.
    figs = open_view(browser, server, f"/run/{quote(RUN_AGENT)}", "run-compile-only")
    d = api(server, "/v1/dashboard/run", id=RUN_AGENT)
    assert d["run"]["mode"] == "compile" and figs["run.mode"] == "compile-only"
    assert figs["run.compile_rate"] == fmt_pct(d["run"]["compile_rate"]) == "66.7%"
    assert "run.correct_rate" not in figs
    assert "correct rate" not in browser.evaluate("document.body.innerText").lower()  # never "0.0 % correct"
    assert not browser.evaluate("!!document.querySelector('[data-chart=\"reward\"]')")
    for s in d["steps"]:
        assert cell(browser, f'tr[data-step="{s["step"]}"]', "step.verdicts") == mix_text(s["verdicts"])
        assert cell(browser, f'tr[data-step="{s["step"]}"]', "step.correct_rate") is None
    assert [t["pass_at_k"] for t in d["tasks"]] == [{"1": None, "5": None, "10": None}]

    # Filters and paging travel in the link: steps 1..2 only, pass@1 and pass@2.
    figs = open_view(browser, server, f"/run/{quote(RUN_RL)}?from=1&to=2&k=1%2C2", "run-filtered")
    d = api(server, "/v1/dashboard/run", id=RUN_RL, from_step=1, to_step=2, k="1,2")
    assert [s["step"] for s in d["steps"]] == [1, 2] and d["k"] == [1, 2]
    sel = 'tr[data-task="br_vecadd"]'
    assert cell(browser, sel, "task.samples") == fmt_int(6)
    assert cell(browser, sel, "pass@2") == fmt_pct(next(t for t in d["tasks"]
                                                         if t["task"] == "br_vecadd")["pass_at_k"]["2"])


def test_tasks_and_task(browser, filled):
    server, _ = filled
    # The library browser: every task in natural order, 50 a page.
    figs = open_view(browser, server, "/tasks", "tasks-library")
    d = api(server, "/v1/dashboard/tasks", limit=50)
    lib = [t for t in api(server, "/v1/tasks")["items"] if "cuda" in t["languages"]]   # the browser: the CUDA library
    assert figs["tasks.total"] == fmt_int(len(lib)) and d["total"] == len(lib) > 100
    shown = browser.evaluate("[...document.querySelectorAll('tr[data-task]')].map(r => r.dataset.task)")
    assert shown == [t["name"] for t in d["items"]] == [t["name"] for t in lib[:50]]
    assert shown.index("l1_2_standard_matrix_multiplication") < shown.index("l1_10_3d_tensor_matrix_multiplication")
    for t in d["items"]:
        sel = f'tr[data-task="{t["name"]}"]'
        assert cell(browser, sel, "task.shapes") == fmt_int(len(t["shapes"]))
        assert cell(browser, sel, "task.torch_ms") == fmt_ms((t["provenance"] or {}).get("h100_torch_eager_ms"))
    assert cell(browser, 'tr[data-task="l1_1_square_matrix_multiplication"]', "task.torch_ms") == "2.660 ms"
    # Filtered to level 1 activations: the library task the stand-in timed shows its reference time.
    figs = open_view(browser, server, "/tasks?q=relu&level=1", "tasks-filtered")
    d = api(server, "/v1/dashboard/tasks", q="relu", level=1)
    rows = {t["name"]: t for t in d["items"]}
    assert LIB_TASK in rows and all("relu" in n or "relu" in t["title"].lower() for n, t in rows.items())
    ref = next(x for x in rows[LIB_TASK]["reference_times"] if x["shape"] == "default")
    assert cell(browser, f'tr[data-task="{LIB_TASK}"]', "task.reference_ms") == fmt_ms(ref["median_ms_mean"])
    assert cell(browser, f'tr[data-task="{LIB_TASK}"]', "task.submissions") == "1"

    # The tasks with submissions, busiest first (inline tasks too).
    open_view(browser, server, "/tasks?source=history", "tasks")
    items = api(server, "/v1/dashboard/tasks", source="history")["items"]
    assert {t["task"] for t in items} >= {"br_vecadd", "br_vecmul", LIB_TASK}
    for t in items:
        sel = f'tr[data-task="{t["task"]}"]'
        assert cell(browser, sel, "task.submissions") == fmt_int(t["submissions"])
        assert cell(browser, sel, "task.correct_rate") == fmt_pct(t["correct_rate"])

    # A library task's page: description, shapes, the published times and the reference times measured.
    figs = open_view(browser, server, f"/task/{LIB_TASK}", "task-library")
    d = api(server, f"/v1/dashboard/tasks/{LIB_TASK}")
    assert figs["task.description"] == d["info"]["description"] and len(d["info"]["description"]) > 20
    assert figs["task.torch_eager_ms"] == fmt_ms(d["info"]["provenance"]["h100_torch_eager_ms"])
    assert figs["task.torch_compile_ms"] == fmt_ms(d["info"]["provenance"]["h100_torch_compile_ms"])
    refs = d["reference_times"]
    assert {x["shape"] for x in refs} == {sh["name"] for sh in d["info"]["shapes"]}
    for x in refs:
        assert x["gpu_name"].startswith("CPU stand-in") and x["n"] == 1
        sel = f'tr[data-shape="{x["shape"]}"]'
        assert cell(browser, sel, "ref.mean_ms") == fmt_ms(x["median_ms_mean"])
        assert cell(browser, sel, "ref.n") == "1"

    figs = open_view(browser, server, "/task/br_vecmul", "task")
    d = api(server, "/v1/dashboard/tasks/br_vecmul", limit=20)
    assert figs["task.name"] == "br_vecmul"
    assert figs["task.submissions"] == fmt_int(d["summary"]["submissions"]) == "12"
    assert figs["task.correct_rate"] == fmt_pct(d["summary"]["correct_rate"])
    assert figs["task.median_speedup"] == fmt_x(d["median_speedup"])
    board = d["leaderboard"]
    assert len(board) == 10 and board[0]["speedup"] == pytest.approx(2.67)
    shown = browser.evaluate("[...document.querySelectorAll('tr[data-id]')].map(r => "
                             "[+r.dataset.id, r.querySelector('[data-fig=\"leader.speedup\"]').textContent])")
    assert shown == [[b["id"], fmt_x(b["speedup"])] for b in board]
    assert charts(browser) >= 1
    # Each row carries its result's yardsticks; an inline task never has PyTorch baselines.
    assert all(b["speedup_vs"]["reference"] == pytest.approx(b["speedup"]) and b["speedup_vs"]["torch_eager"] is None
               for b in board), board
    # The yardstick picker: against torch eager nothing to show (–, never a guess); the strongest falls back
    # to the reference when no baseline exists.
    for y, want in (("torch_eager", lambda b: "–"), ("strongest", lambda b: fmt_x(b["speedup"]))):
        open_view(browser, server, f"/task/br_vecmul?y={y}", f"task-yardstick-{y}")
        assert browser.evaluate("document.querySelector('select[name=yardstick]').value") == y
        shown = browser.evaluate("[...document.querySelectorAll('tr[data-id]')].map(r => "
                                 "[+r.dataset.id, r.querySelector('[data-fig=\"leader.speedup\"]').textContent])")
        assert shown == [[b["id"], want(b)] for b in board], (y, shown)


def test_submission_compile_error_and_turns(browser, filled):
    server, ids = filled
    sid = ids["turn0"]
    figs = open_view(browser, server, f"/submission/{sid}", "submission-compile-error")
    d = api(server, f"/v1/dashboard/submissions/{sid}")
    res = d["submission"]["result"]
    assert figs["sub.verdict_text"] == "compile_error"
    assert figs["sub.feedback"] == res["feedback"]
    log = res["compile"]["log"]
    err_lines = [ln for ln in log.split("\n") if " error" in ln and "detected" not in ln]
    marked = browser.evaluate("[...document.querySelectorAll('[data-err]')].map(e => e.textContent)")
    assert marked == err_lines and marked, (marked, log)
    # The error is on line 4 of the source (the tag comment is line 1): that line is marked too.
    assert browser.evaluate("[...document.querySelectorAll('tr.mark')].map(r => r.dataset.line)") == ["4"]
    assert d["request"]["source"].split("\n")[3].strip() == "y[0] = missing_name;"
    children = [t["id"] for t in d["turns"]["children"]]
    assert children == [ids["turn1"]]
    assert browser.evaluate("[...document.querySelectorAll('[data-turn]')].map(e => +e.dataset.turn)") == \
        [sid, ids["turn1"]]

    # The last turn: its parent chain, oldest first.
    sid = ids["turn2"]
    figs = open_view(browser, server, f"/submission/{sid}", "submission-turns")
    d = api(server, f"/v1/dashboard/submissions/{sid}")
    assert [t["id"] for t in d["turns"]["ancestors"]] == [ids["turn0"], ids["turn1"]]
    assert browser.evaluate("[...document.querySelectorAll('[data-turn]')].map(e => +e.dataset.turn)") == \
        [ids["turn0"], ids["turn1"], sid]
    assert figs["sub.verdict_text"] == "compiled"
    assert browser.evaluate("document.querySelectorAll('[data-err]').length") == 0


def test_submission_standin_correct(browser, filled):
    server, ids = filled
    sid = ids["correct"]
    figs = open_view(browser, server, f"/submission/{sid}", "submission-correct")
    d = api(server, f"/v1/dashboard/submissions/{sid}")
    s, res = d["submission"], d["submission"]["result"]
    assert figs["sub.standin"].startswith("stand-in result")
    assert figs["sub.speedup"] == fmt_x(s["speedup"])
    assert figs["sub.feedback"] == res["feedback"]
    assert figs["sub.gpu_busy"] == fmt_ms(res["gpu_busy_ms"])
    for sh in res["timing"]["shapes"]:
        for side in ("candidate", "reference"):
            sel = f'tr[data-shape="{sh["shape"]}"][data-side="{side}"]'
            assert cell(browser, sel, "timing.median") == fmt_ms(sh[side]["median_ms"])
            assert cell(browser, sel, "timing.trials") == fmt_int(sh[side]["trials"])
    k = res["resources"][0]
    assert cell(browser, f'tr[data-kernel="{k["kernel"]}"]', "res.registers") == fmt_int(k["registers"])
    assert charts(browser) >= 1  # the timing trials


def test_submission_standin_incorrect(browser, filled):
    server, ids = filled
    sid = ids["incorrect"]
    figs = open_view(browser, server, f"/submission/{sid}", "submission-incorrect")
    d = api(server, f"/v1/dashboard/submissions/{sid}")
    res = d["submission"]["result"]
    assert figs["sub.verdict_text"] == "incorrect"
    assert figs["sub.feedback"] == res["feedback"]
    want = [[str(m["index"]), str(m["got"]), str(m["want"])]
            for b in res["correctness"]["shapes"][0]["buffers"] for m in b["first_mismatches"]]
    shown = browser.evaluate("[...document.querySelectorAll('tr[data-mismatch]')].map(r => [r.dataset.mismatch, "
                             "r.querySelector('[data-fig=\"mismatch.got\"]').textContent, "
                             "r.querySelector('[data-fig=\"mismatch.want\"]').textContent])")
    assert shown == want and len(want) == 3


def test_unknown_submission_says_so(browser, filled):
    server, _ = filled
    browser.goto(f"{server.url}/#/submission/999999")
    browser.wait_for("document.body.getAttribute('data-ready') === 'error'", timeout=30 * SLOW)
    assert "no submission 999999" in figures(browser)["error"]
    # The 404 of the data route is the only error the browser saw.
    errs = [e for e in browser.errors if "404" not in e]
    assert errs == [], browser.errors
    browser.errors.clear()


def test_token_asked_and_sent_as_header(browser, tmp_module):
    """auth on: the page asks for a token, keeps it in sessionStorage, sends it as a Bearer header."""
    s = Server(tmp_module / "auth", ["--auth", "on"]).start()
    try:
        s.wait_ready()
        tok = s.kevald("token", "create", "viewer", "--db", str(s.db)).stdout.strip()
        assert tok.startswith("kvd_")
        with s.client() as c:
            assert c.get("/v1/dashboard/now").status_code == 401
            assert c.get("/").status_code == 200  # the page itself holds no data
        browser.goto(f"{s.url}/#/now")
        browser.wait_for("document.body.getAttribute('data-ready') === 'error' && "
                         "!document.getElementById('auth').hidden", timeout=30 * SLOW)
        browser.screenshot(SCREENSHOTS / "auth-asks-token.png")
        browser.evaluate(f"document.getElementById('auth-token').value = {tok!r};"
                         "document.getElementById('auth-form').requestSubmit(); true")
        browser.wait_for("document.body.getAttribute('data-ready') === '1'", timeout=30 * SLOW)
        figs = figures(browser)
        assert figs["totals.submissions"] == "0"
        assert browser.evaluate("sessionStorage.getItem('kevald-token')") == tok
        assert tok not in browser.evaluate("location.href")
        assert browser.evaluate("document.getElementById('auth').hidden") is True
        browser.screenshot(SCREENSHOTS / "auth-with-token.png")
        # The only errors: the 401s before the token was given.
        assert [e for e in browser.errors if "401" not in e] == [], browser.errors
        browser.errors.clear()
    finally:
        assert_stopped_cleanly(s)
