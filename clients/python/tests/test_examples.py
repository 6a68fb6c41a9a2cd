"""
The worked examples (clients/examples) run as scripts against the real
server in compile mode, as CI runs them; plot_history also on a fixture copy
of the database with synthetic speedups. refine.py's policy is also fed
full-mode results shaped like the server's (docs/internals.md), since no GPU
is here to produce them.
"""
import importlib.util
import json
import os
import re
import sqlite3
import subprocess
import sys

import kevald
from conftest import EXAMPLES, KEVALD, PKG_ROOT, SLOW

PNG = b"\x89PNG\r\n\x1a\n"


def run(script, *args, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(PKG_ROOT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=timeout * SLOW, env=env)


def test_rollout_compile_mode(server):
    p = run("rollout.py", "--server", server.url, "--mode", "compile", "--run-id", "ci-rollout", "--batch-size",
            "100")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "256 candidates over 8 tasks, 8 variants" in out
    assert "verdicts: {'compile_error': 32, 'compiled': 192, 'rejected': 32}" in out
    assert "every verdict as expected" in out
    assert re.search(r"throughput [\d.]+ submissions/s \(compile mode\)", out)
    assert "256/256" in p.stderr                         # the progress bar
    with kevald.Client(server.url) as c:
        rows = list(c.history(run_id="ci-rollout"))
    assert len(rows) == 256                               # one row per candidate, none twice
    assert sorted(r.tags["sample"] for r in rows) == list(range(256))
    by = {}
    for r in rows:
        by.setdefault(r.tags["labels"]["variant"], set()).add(r.verdict)
    assert by["compile_error"] == {"compile_error"} and by["rejected"] == {"rejected"}
    assert by["vec4"] == {"compiled"} and by["oob_write"] == {"compiled"}
    with kevald.Client(server.url) as c:
        vec = list(c.history(run_id="ci-rollout", label={"variant": "vec4"}))
    assert len(vec) == 32 and all(r.tags["labels"]["variant"] == "vec4" for r in vec)
    cli = subprocess.run([str(KEVALD), "history", "--server", server.url, "--run-id", "ci-rollout", "--label",
                          "variant=rejected", "--limit", "1000", "--json"], capture_output=True, text=True,
                         timeout=60 * SLOW)
    assert cli.returncode == 0 and {r["verdict"] for r in json.loads(cli.stdout)} == {"rejected"}
    assert len(json.loads(cli.stdout)) == 32


def test_rollout_async(server):
    p = run("rollout.py", "--server", server.url, "--mode", "compile", "--count", "40", "--async",
            "--tasks", "l1_19_relu,l1_21_sigmoid", "--penalty", "compile_error=-1", "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "40 candidates over 2 tasks" in p.stdout
    # 40 samples, 8 variants in turn: compile_error gets 5 (samples 5, 13, 21, 29, 37), reward -1 each.
    assert re.search(r"compile_error\s+5\s+-1\.000", p.stdout), p.stdout
    assert "every verdict as expected" in p.stdout


def test_refine_compile_mode(server):
    p = run("refine.py", "--server", server.url, "--mode", "compile")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    rid = re.search(r"refine (\S+):", out).group(1)
    assert re.search(r"3 turns: \d+:compile_error -> \d+:rejected -> \d+:compiled", out), out
    assert "identifier \"xx\" is undefined" in out and "argument 2 is i32 (4 bytes)" in out
    assert "chain linked by tags.parent/tags.turn: yes; outcome: done" in out
    with kevald.Client(server.url) as c:
        chain = sorted(c.history(run_id=rid), key=lambda s: s.id)
    assert [s.tags.get("turn") for s in chain] == [1, 2, 3]
    assert chain[1].tags["parent"] == chain[0].id and chain[2].tags["parent"] == chain[1].id


def _load_refine():
    spec = importlib.util.spec_from_file_location("refine_example", EXAMPLES / "refine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sub(verdict, **result):
    result.update(verdict=verdict, feedback=result.get("feedback", ""))
    return kevald.Submission.from_dict({"id": 9, "state": "done", "verdict": verdict, "tags": {"turn": 1},
                                        "result": result})


def test_refine_policy_full_mode_story():
    refine = _load_refine()
    pol = refine.ScriptedPolicy()
    src, plan = pol.candidate(1)
    assert "xx[i]" in src and "i + 1 < n" in src and plan[0]["args"][2]["type"] == "i32"
    assert pol.act(_sub("compile_error", compile={"ok": False, "log":
                   'kernel.cu(7): error: identifier "xx" is undefined\n  float v = xx[i];\n'}), "full") == "continue"
    assert pol.act(_sub("rejected", error={"kind": "plan", "message": "launch 0 ('relu'): argument 2 is i32 "
                   "(4 bytes) but the kernel's parameter 2 is 8 bytes"}), "full") == "continue"
    src, plan = pol.candidate(3)
    assert "x[i]" in src and "xx" not in src and plan[0]["args"][2]["type"] == "u64"
    # The poisoned last element is a NaN/Inf disagreement, counted apart from value mismatches.
    inc = {"passed": False, "shapes": [{"shape": "default", "passed": False, "buffers": [
        {"name": "y", "mismatches": 0, "nan_inf_mismatches": 1, "count": 1610612736,
         "first_mismatches": [{"index": 1610612735, "got": "nan", "want": 0.5}]}]}]}
    assert pol.act(_sub("incorrect", correctness=inc), "full") == "continue"
    src, plan = pol.candidate(4)
    assert "i < n" in src and plan[0]["grid"] == [132]
    slow = {"compiled": True, "correct": True, "speedup": 0.31}
    assert pol.act(_sub("correct", reward_fields=slow), "full") == "continue"
    src, plan = pol.candidate(5)
    assert "float4" in src and plan[0]["grid"] == ["min(ceil_div(B * D, 1024), 1048576)"]
    fast = {"compiled": True, "correct": True, "speedup": 1.07}
    assert pol.act(_sub("correct", reward_fields=fast), "full") == "done"
    # A symptom it does not know ends the loop as stuck.
    assert refine.ScriptedPolicy().act(_sub("runtime_error", error={"kind": "cuda"}), "full") == "stuck"
    wrong = {"passed": False, "shapes": [{"shape": "tiny", "passed": False, "buffers": [
        {"name": "y", "mismatches": 40, "count": 99, "first_mismatches": [{"index": 0, "got": 1, "want": 2}]}]}]}
    assert refine.ScriptedPolicy().act(_sub("incorrect", correctness=wrong), "full") == "stuck"


def test_plot_history(server, tmp_path):
    # Make sure the history holds six l1_19_relu rows (the other tests may run in another process).
    with kevald.Client(server.url) as c:
        ids = c.submit_batch([{"source": f"// {i}\nextern \"C\" __global__ void k(float *y) {{ y[0] = 1; }}",
                               "mode": "compile", "task": "l1_19_relu"} for i in range(6)])
        c.wait_all(ids, timeout=120 * SLOW)
    out = tmp_path / "verdicts.png"
    p = run("plot_history.py", "--db", str(server.db), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "plotting verdict counts per task instead" in p.stdout
    assert re.search(r"l1_19_relu\s+.*compiled:\d+", p.stdout)
    assert out.read_bytes().startswith(PNG) and out.stat().st_size > 5000

    # A fixture copy of the database (SQLite's backup API from a read-only connection), with
    # synthetic speedups written into the copy only.
    copy = tmp_path / "copy.db"
    src = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True)
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    rows = dst.execute("SELECT id FROM submissions WHERE task = 'l1_19_relu' ORDER BY id LIMIT 6").fetchall()
    assert len(rows) == 6
    for k, (rid,) in enumerate(rows):
        dst.execute("UPDATE submissions SET verdict = 'correct', state = 'done', speedup = ? WHERE id = ?",
                    ((0.4, 0.8, 1.2, 1.7, 3.0, 5.0)[k], rid))
    dst.commit()
    dst.close()
    out2 = tmp_path / "speedups.png"
    p = run("plot_history.py", "--db", str(copy), "--out", str(out2))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "speedup distribution of 6 correct submissions over 1 tasks" in p.stdout
    assert re.search(r"l1_19_relu\s+n=6\s+geomean 1\.463x\s+< 0\.5x:1 0\.5-1x:1 1-1\.5x:1 1\.5-2x:1 2-4x:1 >= 4x:1",
                     p.stdout), p.stdout
    assert out2.read_bytes().startswith(PNG)
    p = run("plot_history.py", "--db", str(tmp_path / "none.db"), "--out", str(out2))
    assert p.returncode != 0 and "no database file" in p.stderr


def test_without_httpx(server):
    """Hosts without httpx (the GPU host, maybe): the sync client falls back to urllib, the async one to threads."""
    code = (
        "import sys, runpy\n"
        "sys.modules['httpx'] = None\n"
        "import kevald\n"
        "assert not kevald.HAVE_HTTPX\n"
        "assert type(kevald.Client('http://x')._t).__name__ == 'UrllibTransport'\n"
        f"sys.argv = ['rollout.py', '--server', {server.url!r}, '--count', '16', '--async', '--no-progress']\n"
        f"runpy.run_path({str(EXAMPLES / 'rollout.py')!r}, run_name='__main__')\n")
    env = dict(os.environ, PYTHONPATH=str(PKG_ROOT))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300 * SLOW, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "16 candidates" in p.stdout and "every verdict as expected" in p.stdout
