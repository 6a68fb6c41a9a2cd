"""
Compile mode end to end: a real NVRTC compile in a real (sandboxed)
kevald-compile worker, the verdict and compile report in the stored result,
and the compile cache.
"""
import json
import os
import re
import subprocess
import time

from conftest import (accepted, compile_sub, unique, wait_done, BROKEN_KERNEL, GOOD_KERNEL, KEVALD, LIBEXEC, SLOW,
                      SOURCE_ROOT, Server)

TEMPLATE_KERNEL = r'''
template <typename T, int B>
__global__ void scale(T *y, T a, int n)
{
        int i = blockIdx.x * B + threadIdx.x;
        if (i < n)
                y[i] *= a;
}
'''


def test_good_kernel_compiles(client):
    sid = accepted(client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL))))
    done = wait_done(client, sid)
    assert done["state"] == "done" and done["verdict"] == "compiled", done
    res = done["result"]
    assert res["verdict"] == "compiled"
    comp = res["compile"]
    assert comp["ok"] is True and comp["cache_hit"] is False
    assert comp["compile_ms"] > 0
    assert comp["arch"].startswith("sm_")
    kernels = {k["name"]: k for k in comp["kernels"]}
    assert list(kernels) == ["saxpy"], comp["kernels"]
    params = kernels["saxpy"]["params"]
    # (float a, const float *x, float *y, int n)
    assert [p["size"] for p in params] == [4, 8, 8, 4], params
    assert [p["offset"] for p in params] == [0, 8, 16, 24], params
    assert kernels["saxpy"]["registers"] > 0
    assert res["reward_fields"]["compiled"] is True
    assert res["reward_fields"]["speedup"] is None
    assert done["speedup"] is None, "no timing in compile mode: speedup is null, not 0"
    assert done["finished_at"] >= done["created_at"]


def test_broken_kernel_compile_error(client):
    sid = accepted(client.post("/v1/submissions", json=compile_sub(unique(BROKEN_KERNEL))))
    done = wait_done(client, sid)
    assert done["verdict"] == "compile_error", done
    comp = done["result"]["compile"]
    assert comp["ok"] is False
    log = comp["log"]
    assert "undefined_name_xq" in log and "error" in log, log
    # The error line: line 5 of the submitted text (the unique() comment is line 1).
    assert "(5)" in log or "line 5" in log, log
    assert "/usr/local/cuda" not in log and "/tmp/" not in log, "no host paths in the log"
    assert done["result"]["reward_fields"]["compiled"] is False


def test_compile_cache_hit(client):
    src = unique(GOOD_KERNEL)
    first = wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub(src))))
    assert first["result"]["compile"]["cache_hit"] is False
    second = wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub(src))))
    assert second["verdict"] == "compiled"
    assert second["result"]["compile"]["cache_hit"] is True
    assert second["result"]["compile"]["kernels"] == first["result"]["compile"]["kernels"]
    # Different options are a different key.
    third = wait_done(client, accepted(client.post("/v1/submissions",
                                                   json=compile_sub(src, options=["-DFOO=1"]))))
    assert third["result"]["compile"]["cache_hit"] is False


def test_name_expressions(client):
    sub = compile_sub(unique(TEMPLATE_KERNEL), name_expressions=["scale<float, 256>"])
    done = wait_done(client, accepted(client.post("/v1/submissions", json=sub)))
    assert done["verdict"] == "compiled", done
    names = [k["name"] for k in done["result"]["compile"]["kernels"]]
    assert len(names) == 1 and names[0].startswith("_Z5scaleIfLi256EE"), names


def test_include_of_host_file_fails_safely(client):
    src = unique('#include "/etc/passwd"\n' + GOOD_KERNEL)
    done = wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub(src))))
    assert done["verdict"] in ("compile_error", "rejected"), done
    log = done["result"].get("compile", {}).get("log", "")
    assert "root:" not in log, "NVRTC must not echo a host file into the log"


VADD = SOURCE_ROOT / "tests" / "gpu" / "cases" / "vadd_correct.cu"


def test_eval_with_a_relative_libexec(tmp_path):
    """`kevald eval --libexec build/worker` from another folder: the workers
    start in "/", so the dispatcher must resolve the folder first."""
    rel = os.path.relpath(LIBEXEC, tmp_path)
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--libexec", rel, "--source", str(VADD)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120 * SLOW)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["verdict"] == "compiled"


def test_eval_gives_up_when_the_compile_worker_cannot_start(tmp_path):
    """No compile worker at --libexec: a clear error within seconds, not a wait for ever."""
    t0 = time.monotonic()
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--libexec", str(tmp_path / "nowhere"), "--source",
                        str(VADD)], capture_output=True, text=True, timeout=60 * SLOW)
    assert p.returncode != 0
    assert "compile worker keeps failing to start" in p.stderr
    assert time.monotonic() - t0 < 30 * SLOW


def test_readme_eval_examples(tmp_path):
    """README's `kevald eval` lines name files that exist, and the compile-only one runs as written."""
    lines = [ln.split("#")[0].split() for ln in (SOURCE_ROOT / "README.md").read_text().splitlines()
             if ln.startswith("build/server/kevald eval ")]
    assert len(lines) >= 2, lines
    for argv in lines:
        for flag in ("--source", "--plan"):
            if flag in argv:
                f = SOURCE_ROOT / argv[argv.index(flag) + 1]
                assert f.is_file(), f"README names {f}, which does not exist"
    compile_only = [a for a in lines if "--compile" in a]
    assert compile_only
    for argv in compile_only:
        p = subprocess.run([str(KEVALD), *argv[1:], "--libexec", str(LIBEXEC)], cwd=SOURCE_ROOT,
                           capture_output=True, text=True, timeout=120 * SLOW)
        assert p.returncode == 0, (argv, p.stdout[-1000:], p.stderr[-2000:])
        assert json.loads(p.stdout)["verdict"] == "compiled"


def test_eval_exit_status_is_the_verdicts(tmp_path):
    """eval and submit share one table: rejected is 5, usage 64 (not 2, which is compile_error)."""
    src = tmp_path / "k.cu"
    src.write_text((SOURCE_ROOT / "docs" / "examples" / "relu.cu").read_text().replace('extern "C" ', ""))
    plan = SOURCE_ROOT / "docs" / "examples" / "relu.plan.json"
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--libexec", str(LIBEXEC), "--task", "l1_19_relu",
                        "--source", str(src), "--plan", str(plan)], capture_output=True, text=True, timeout=120 * SLOW)
    assert p.returncode == 5 and json.loads(p.stdout)["verdict"] == "rejected", (p.returncode, p.stdout[-500:])
    bad = tmp_path / "bad.plan.json"
    bad.write_text(plan.read_text().replace("[256]", "[4096]"))
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--libexec", str(LIBEXEC), "--task", "l1_19_relu",
                        "--source", str(src), "--plan", str(bad)], capture_output=True, text=True, timeout=120 * SLOW)
    res = json.loads(p.stdout)
    assert p.returncode == 5 and res["error"] == {"kind": "submission", "pointer": "/plan/0/block/0",
                                                   "message": res["error"]["message"]}, (p.returncode, res)
    # Full mode on this host without a GPU: rejected at acceptance, so answered (not "no GPU", 69).
    p = subprocess.run([str(KEVALD), "eval", "--libexec", str(LIBEXEC), "--task", "l1_19_relu",
                        "--source", str(src), "--plan", str(bad)], capture_output=True, text=True, timeout=120 * SLOW)
    assert p.returncode == 5 and json.loads(p.stdout)["verdict"] == "rejected", (p.returncode, p.stderr[-500:])
    src.write_text("extern \"C\" __global__ void k(float *y) { y[0] = nope; }\n")
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--libexec", str(LIBEXEC), "--source", str(src)],
                       capture_output=True, text=True, timeout=120 * SLOW)
    assert p.returncode == 2 and json.loads(p.stdout)["verdict"] == "compile_error", p.returncode
    p = subprocess.run([str(KEVALD), "eval", "--compile", "--no-such-flag"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 64, p.returncode


def test_compile_mode_builds_no_fenced_copy(client):
    """The fenced build serves GPU runs only: on a host without a GPU a compile-mode result has none (it
    costs half again the compile); with a GPU, compile-mode candidates get one too, so the cache
    serves a later evaluation (tests/integration/test_gpu_scheduling.py warms its cache so)."""
    sid = accepted(client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL))))
    done = wait_done(client, sid)
    assert done["verdict"] == "compiled", done
    assert "fence" not in done["result"]["compile"], done["result"]["compile"]


def merged_total(client):
    m = re.search(r"^kevald_compile_merged_total (\d+)$", client.get("/metrics").text, re.M)
    assert m, "kevald_compile_merged_total is exported"
    return int(m.group(1))


def test_a_compile_mode_batch_is_merged_and_each_gets_its_own_result(client):
    """A batch of compile-mode kernels is compiled in merged NVRTC programs
    (worker/compile/group.h), and each gets exactly what it gets alone: the
    verdict, the log and the kernels. Among them, sources that must not
    merge: compile errors, one that closes its namespace and one that uses
    what it leaked, a helper that collides with CUDA's max() alone (an
    error there, which its own namespace would hide), a kernel with a
    warning."""
    leak = ("} __device__ float leaked(float v) { return v; } namespace q {\n"
            "extern \"C\" __global__ void k(float *x) { x[0] = leaked(1.0f); }\n")
    uses_leak = "extern \"C\" __global__ void k(float *x) { x[0] = leaked(2.0f); }\n"
    # alone, its max() is ambiguous with CUDA's; in a namespace of its own it would hide CUDA's and compile
    helper = ("namespace { __device__ float max(float a, float b) { return a > b ? a : b; } }\n"
              "extern \"C\" __global__ void k(float *x) { x[0] = max(x[0], 1.0f); }\n")
    warning = "extern \"C\" __global__ void k(float *x) {\n  int unused;\n  x[0] = 1.0f; }\n"
    srcs = ([unique(GOOD_KERNEL) for _ in range(14)] + [unique(BROKEN_KERNEL) for _ in range(3)]
            + [unique(leak), unique(uses_leak), unique(helper), unique(warning)])
    before = merged_total(client)
    r = client.post("/v1/submissions", json={"submissions": [compile_sub(s) for s in srcs]})
    assert r.status_code == 202, r.text
    batch = [wait_done(client, i) for i in r.json()["ids"]]
    assert merged_total(client) >= before + 2, "some of the batch was merged"
    want = {"compiled": 15, "compile_error": 6}
    got = {}
    for src, b in zip(srcs, batch):
        got[b["verdict"]] = got.get(b["verdict"], 0) + 1
        alone = wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub(src))))
        assert b["verdict"] == alone["verdict"], (src, b, alone)
        for key in ("ok", "log", "kernels", "error"):
            assert b["result"]["compile"].get(key) == alone["result"]["compile"].get(key), (key, src, b, alone)
        assert "group_prefix" not in b["result"]["compile"] and "member" not in b["result"]["compile"]
    assert got == want, got


def test_compile_group_1_sends_each_alone(tmp_path):
    """--compile-group 1 (the operator's off switch): a batch is compiled one request at a time."""
    s = Server(tmp_path / "g1", ["--compile-group", "1", "--compile-workers", "1"]).start()
    try:
        s.wait_ready()
        with s.client() as c:
            r = c.post("/v1/submissions", json={"submissions": [compile_sub(unique(GOOD_KERNEL)) for _ in range(6)]})
            assert r.status_code == 202, r.text
            assert [wait_done(c, i)["verdict"] for i in r.json()["ids"]] == ["compiled"] * 6
            assert merged_total(c) == 0
            assert re.search(r"^kevald_compile_groups_total 0$", c.get("/metrics").text, re.M)
    finally:
        s.stop()
