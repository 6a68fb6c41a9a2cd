"""
KernelBench submissions through the real `kevald serve` and the real kevald-torch, end to end
(issue 29): the server's side (tests/integration/test_kernelbench.py, with a stand-in worker)
and the worker's side (worker/torch/tests, without the server) meet here. CI has neither PyTorch
nor a GPU, so the worker imports the numpy stand-in for torch (worker/torch/tests/faketorch):
the server runs `<torch_python> <libexec>/kevald-torch --role build|run` with its scrubbed
environment, so torch_python is a small wrapper that puts faketorch on PYTHONPATH (and, in a
sanitized tree, preloads the sanitizer runtimes libkevald-confine.so needs) before it execs a
python3 that has numpy. The workers run sandboxed, as the server starts them by default; the
GPU (index 0) is the stand-in's label. kevald-gpu is the usual stand-in (it judges no
kernelbench job; the GPU's slot is shared with it).

What must hold, for ModelNew sources in plain PyTorch against the fixture task vadd
(tests/fixtures/kernelbench, shape sets default and tiny):
  * verdicts: a correct module is `correct` with a timing per shape set; a wrong one is
    `incorrect` (mismatch); an exception in forward is `runtime_error` (kind python); a CUDA
    error is `runtime_error` (kind cuda), after which the run worker exits 3 and is replaced;
    no ModelNew subclass is `rejected` at /source; a syntax error and a failed load_inline are
    `compile_error` with the worker's log; a forward that never returns is `timeout` (the
    worker's watchdog, exit 4), and the next job still runs; an aliased, downcast or cached output
    is `incorrect` with the judge's kind, a replaced clock `rejected` (tamper);
  * every result is stored (GET /v1/submissions/{id}), listed in the history, and the build
    of an identical source is a cache hit that the run worker can still use;
  * /readyz shows the real workers' HELLOs (roles, torch, the stand-in GPU, their sandbox; run as
    root, the server gives the artifact root to nobody and the build worker drops root too), and the
    stored results and /readyz match the OpenAPI document;
  * a link or a file a build planted where the next source's build folder goes (its name is
    predictable from /readyz) is removed, never followed: what the link names keeps its owner and
    contents, and the build runs in a folder of its own; where no folder can be made, the build is
    not sent and its job ends as internal_error saying why;
  * the build cache's prune (at the server's first tick) removes the least recently used build
    folder while the cache is over its bound, following no link in it, neither to size nor to remove;
  * `kevald kernelbench` scores a runs/ folder of such files through the server;
  * with sandbox = false the workers get --no-sandbox and judge the same;
  * sources that end their build process at import, or signal the build worker, fail only their own
    build (compile_error): the build worker answers, no failure is counted, the server lives on.
Exit 77 (skipped) only where no python3 with numpy can load libkevald-confine.so.
"""
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (FIXTURE_TASKS, LIBEXEC, SLOW, SOURCE_ROOT, Server, assert_stopped_cleanly, nice_of,
                      wait_done, wait_torch_ready)

FAKETORCH = SOURCE_ROOT / "worker" / "torch" / "tests" / "faketorch"
KB_FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "kernelbench"
sys.path.insert(0, str(SOURCE_ROOT / "worker" / "torch" / "tests"))
sys.path.insert(0, str(SOURCE_ROOT / "tests" / "pylib"))
import standin_gpu_worker as standin_gpu  # noqa: E402


def numpy_python():
    for py in ("/usr/bin/python3", shutil.which("python3")):
        try:
            if py and subprocess.run([py, "-c", "import numpy"], capture_output=True, timeout=30).returncode == 0:
                return py
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def why_not():
    """Why the stand-in cannot serve here, or None."""
    if not (LIBEXEC / "kevald-torch").exists() or not (LIBEXEC / "libkevald-confine.so").exists():
        return f"no kevald-torch and libkevald-confine.so in {LIBEXEC} (build first)"
    py = numpy_python()
    if py is None:
        return "no python3 with numpy for the faketorch stand-in"
    import helpers  # worker/torch/tests: the library's sanitizer environment, loading it
    if not helpers.lib_loads(py):
        return f"{py} cannot load libkevald-confine.so"
    return None


REASON = why_not()
if not REASON:
    import helpers  # noqa: E402

PY = numpy_python()


@pytest.fixture(scope="module", autouse=True)
def faketorch_serves():
    """meson's skip (exit status 77) where the stand-in cannot serve; pytest.exit() from a test, not at
    import (there pytest 7 reports it as a collection error)."""
    if REASON:
        pytest.exit(f"SKIP: {REASON}", returncode=77)
JOB_TIMEOUT_S = 6   # the run JOB's deadline_ms: what the hanging module costs
LAUNCH_TIMEOUT_MS = 1500   # what a kernel still running after a model's first forward costs
BUILD_WORKERS = 3   # --torch-build-workers: not compile_workers' one per core

HEAD = """import torch
import torch.nn as nn
# {salt}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
"""
BODIES = {
    "correct": "        return a + b\n",
    "correct_scaled": "        return (a * 2.0 + b * 2.0) * 0.5\n",
    "incorrect": "        return a - b\n",
    "raises": "        raise ValueError('not implemented yet')\n",
    "cuda_fault": "        raise RuntimeError('CUDA error: an illegal memory access was encountered')\n",
    "syntax": "        return (a + b\n",
    "hang": "        while True:\n            pass\n",
    # a kernel that never ends (the stand-in's torch.cuda._sleep holds the synchronize after forward)
    "kernel_hang": "        torch.cuda._sleep(10 ** 15)\n        return a + b\n",
    "alias": "        return a.add_(b)\n",
    "downcast": "        return (a + b).half()\n",
    "caching": "        if not hasattr(self, 'c'):\n            self.c = a + b\n        return self.c\n",
    "socket": "        import socket\n        socket.socket()\n        return a + b\n",
    "spawn": "        import subprocess\n        subprocess.run(['/bin/true'])\n        return a + b\n",
}


def source(kind, salt=None):
    salt = salt or os.urandom(8).hex()
    if kind == "no_model_new":   # refused by the server before any worker sees it
        return f"import torch\n# {salt}\nX = 1\n"
    if kind == "not_a_module":
        return f"import torch\n# {salt}\n\n\nclass ModelNew:\n    pass\n"
    if kind == "tamper":   # the judge's clock replaced
        return ("import torch\ntorch.cuda.Event.elapsed_time = lambda self, end: 1e-3\n" +
                HEAD.format(salt=salt) + BODIES["correct"])
    if kind == "load_inline":
        return (f"import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n# {salt}\n"
                "ext = load_inline(name='vadd_ext', cpp_sources='', cuda_sources='__global__ void k() {}')\n\n\n"
                "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a + b\n")
    return HEAD.format(salt=salt) + BODIES[kind]


def sub(kind, salt=None, **extra):
    return dict({"task": "vadd", "language": "kernelbench", "source": source(kind, salt), "timing": "fast"}, **extra)


class RealTorchServer:
    """`kevald serve --torch-workers 1` over the real kevald-torch on faketorch."""

    def __init__(self, workdir, args=()):
        self.dir = Path(workdir)
        self.libexec = self.dir / "libexec"
        self.libexec.mkdir(parents=True)
        for name in ("kevald-compile", "kevald-torch", "libkevald-confine.so"):
            os.symlink(LIBEXEC / name, self.libexec / name)   # kevald-torch finds its package by realpath
        standin_gpu.install(self.libexec, {"work_s": 0.02})
        self.python = self.dir / "torch-python"
        env = dict(helpers.LIB_ENV, PYTHONPATH=str(FAKETORCH))
        self.python.write_text("#!/bin/sh\n" + "".join(f"export {k}='{v}'\n" for k, v in env.items()) +
                               f"exec {PY} \"$@\"\n")
        self.python.chmod(self.python.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.tasks = self.dir / "tasks"
        shutil.copytree(FIXTURE_TASKS, self.tasks)
        shutil.copytree(KB_FIXTURES, self.tasks / "kernelbench")
        self.ext = self.dir / "ext"
        self.ext.mkdir()
        if os.geteuid() == 0:   # the way to the artifact root open to nobody (the server gives it the root)
            for d in (self.dir.parent, self.dir):
                os.chmod(d, 0o755)
            # a build an older server's root build worker left: given to nobody too, a rebuild writes it
            (self.ext / "stale" / "ext").mkdir(parents=True)
            (self.ext / "stale" / "ext" / "ext.so").write_text("x")
            os.symlink("/etc/passwd", self.ext / "stale" / "link")   # the link is given, never its target
        self.server = Server(self.dir / "srv", [
            "--libexec", str(self.libexec), "--gpus", "0", "--gpu-workers-per-gpu", "1", "--torch-workers", "1",
            "--torch-python", str(self.python), "--tasks", str(self.tasks), "--torch-ext-dir", str(self.ext),
            "--job-timeout-s", str(JOB_TIMEOUT_S), "--launch-timeout-ms", str(LAUNCH_TIMEOUT_MS),
            "--max-attempts", "1", "--torch-build-workers", str(BUILD_WORKERS), *args])

    OLD_BUILDS = ("0" * 64, "1" * 64, "f" * 64)   # build folders' names, oldest first

    def plant_old_builds(self):
        """Build folders for the first prune: the oldest over the cache's bound (16 GiB, a sparse file), each
        with links to a folder outside that is as big again (a prune that followed them would count it twice
        and remove the second folder too, or remove the files it holds)."""
        self.outside = self.dir / "outside"
        self.outside.mkdir()
        (self.outside / "keep").write_text("keep")
        with open(self.outside / "huge", "wb") as f:
            f.truncate(17 << 30)
        for i, name in enumerate(self.OLD_BUILDS):
            d = self.ext / name
            (d / "sub").mkdir(parents=True)
            (d / "sub" / "f").write_text("x")
            os.symlink(self.outside, d / "link")
            os.symlink(self.outside, d / "sub" / "link")
            if i == 0:
                with open(d / "big", "wb") as f:
                    f.truncate(17 << 30)
            if i < 2:   # 2001 and 2002; the last one is new
                os.utime(d, (978307200 + i * 31536000,) * 2)

    def start(self):
        self.server.start()
        self.server.wait_ready()
        self.wait_torch_ready()
        return self

    def readyz(self):
        with self.server.client() as c:
            return c.get("/readyz").json()

    def wait_torch_ready(self, timeout=60.0):
        return wait_torch_ready(self.server, timeout)

    def run(self, subs, timeout=60.0):
        with self.server.client() as c:
            r = c.post("/v1/submissions", json={"submissions": subs})
            assert r.status_code == 202, r.text
            return [wait_done(c, i, timeout=timeout) for i in r.json()["ids"]]

    def run_pids(self):
        """The run workers' pids once they are ready (each restarts after every job)."""
        return [w.get("pid") for w in self.wait_torch_ready()["torch"]["run"]]


@pytest.fixture(scope="module")
def kbw(tmp_module):
    s = RealTorchServer(tmp_module / "kbw")
    s.plant_old_builds()
    s.start()
    yield s
    assert_stopped_cleanly(s.server)


def test_workers_read_the_bytecode_the_server_compiled(kbw):
    """Run as root, the server makes <torch_ext_dir>.pyc (root's, 0755) and fills it with the bytecode of
    what a worker imports (`kevald-torch --role pycache`, as root); a worker started after that reads it
    (sys.pycache_prefix, after it dropped root) and says so in its HELLO. Not root: no folder, and the
    workers say why."""
    folder = kbw.ext.parent / (kbw.ext.name + ".pyc")
    if os.geteuid() != 0:
        assert not folder.exists()
        (run,) = kbw.wait_torch_ready()["torch"]["run"]
        assert run["pycache"]["active"] is False and "not root" in run["pycache"]["detail"], run
        return
    deadline = time.monotonic() + 60
    while "kevald-torch's bytecode is in" not in kbw.server.log_text():
        assert time.monotonic() < deadline and "filling kevald-torch's bytecode" not in kbw.server.log_text(), \
            kbw.server.log_tail()
        time.sleep(0.2)
    st = folder.lstat()
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode)
    pycs = [p for p in folder.rglob("*.pyc")]
    assert any(p.parent == folder / str(FAKETORCH / "torch").lstrip("/") for p in pycs), pycs[:5]
    assert all(p.stat().st_uid == 0 and not p.stat().st_mode & 0o022 for p in pycs)
    (done,) = kbw.run([sub("correct")])   # the run worker that judged it is replaced by one started now
    assert done["result"]["verdict"] == "correct", done["result"]
    (run,) = kbw.wait_torch_ready()["torch"]["run"]
    m = re.fullmatch(rf"{re.escape(str(folder))}: bytecode of (\d+) of (\d+) modules loaded from source files",
                     run["pycache"]["detail"])
    assert run["pycache"]["active"] is True and m, run
    assert int(m.group(1)) >= 10, run   # faketorch's and this package's at least


def test_readyz_shows_the_real_workers(kbw):
    body = kbw.readyz()
    t = body["torch"]
    assert t["torch"] == "0.0-fake"                      # the build HELLO's torch: part of the build key
    assert t["build"]["workers"][0]["role"] == "torch-build"
    (run,) = t["run"]
    assert run["role"] == "torch-run" and run["gpu"] == 0 and run["name"] == "Fake GPU (numpy)", run
    # torch_build_workers of them, whatever compile_workers is; niced as compile workers are (compile_nice 10),
    # so that builds on every core do not starve the run workers' start-up and judging, which keep the
    # server's priority
    assert len(t["build"]["workers"]) == BUILD_WORKERS, t["build"]
    own = nice_of(kbw.server.proc.pid)
    assert [nice_of(w["pid"]) for w in t["build"]["workers"]] == [min(19, own + 10)] * BUILD_WORKERS
    assert nice_of(run["pid"]) == own
    # each start is logged with its time and the worker's own account of it, step by step
    m = re.search(r"torch-run worker 0 ready \(pid \d+\) in ([0-9.]+) s: Fake GPU \(numpy\) (\{.*\})",
                  kbw.server.log_text())
    assert m, kbw.server.log_tail()
    steps = json.loads(m.group(2))
    assert list(steps) == ["python", "env", "sandbox", "import", "cuda", "handler", "lock"], steps
    assert sum(steps.values()) <= float(m.group(1)) * 1000 + 50, (m.group(1), steps)
    # sandboxed as the server starts them: the library's layers, not a stand-in's or --no-sandbox's
    for role in ("torch-build", "torch-run"):
        layers = body["layers"][role]
        assert "sandbox" not in layers, layers
        assert layers["seccomp"]["active"] and layers["landlock"]["active"] == body["layers"]["compile"][
            "landlock"]["active"], layers
        assert role + " " in layers["seccomp"]["detail"]
    if os.geteuid() == 0:
        # the server, run as root, gave the artifact root (root's: the test made it) to nobody at start, so the
        # build worker drops root (it would refuse to build as root otherwise)
        for p in (kbw.ext, kbw.ext / "stale", kbw.ext / "stale" / "ext", kbw.ext / "stale" / "ext" / "ext.so"):
            st = os.lstat(p)
            assert (st.st_uid, st.st_gid) == (65534, 65534), (p, st)
        assert os.lstat(kbw.ext / "stale" / "link").st_uid == 65534 and os.stat("/etc/passwd").st_uid == 0
        assert "gave the kernelbench build cache" in kbw.server.log_text()
        assert body["layers"]["torch-build"]["uid"]["active"], body["layers"]["torch-build"]["uid"]
        assert "root dropped to uid 65534" in body["layers"]["torch-build"]["uid"]["detail"]


PROBE = """        import os
        out = ["root " + os.environ.get("KEVALD_TORCH_EXT_ROOT", "?")]
        for what, f in (("cache_file", lambda: open({stale!r}).read()), ("cache_list", lambda: os.listdir({ext!r})),
                        ("view", lambda: os.listdir(os.environ["KEVALD_TORCH_EXT_ROOT"]))):
            try:
                f()
                out.append(what + ": ok")
            except OSError as e:
                out.append(what + ": " + type(e).__name__)
        raise RuntimeError("probe; " + "; ".join(out))
"""


def test_a_forbidden_call_in_forward_is_the_candidates(kbw):
    """A candidate that opens a socket is stopped by the run role's system-call filter while the judge
    has said the candidate runs: the worker exits 5, the job is a runtime_error of kind sandbox (before:
    SIGSYS, an infrastructure fault, retried); the next job runs on a fresh worker."""
    (d,) = kbw.run([sub("socket")])
    assert d["result"]["verdict"] == "runtime_error" and d["result"]["error"]["kind"] == "sandbox", d["result"]
    log = kbw.server.log_text()
    assert "(the candidate's code ran): ending the worker" in log and "exited: status 5, signal 0" in log
    (ok,) = kbw.run([sub("correct")])
    assert ok["result"]["verdict"] == "correct"


def test_a_process_the_candidate_starts_is_refused(kbw):
    """subprocess in forward (what Triton does at a kernel's first launch, without the compiler helper):
    the run role's filter answers EPERM, the candidate's own PermissionError is its runtime_error, and
    the worker is not ended by the filter (before: Python's subprocess blocked every signal around
    vfork, so the filter's SIGSYS killed the worker unblamed: internal_error after retries)."""
    log0 = len(kbw.server.log_text())
    (d,) = kbw.run([sub("spawn")])
    err = d["result"].get("error") or {}
    assert d["result"]["verdict"] == "runtime_error" and err.get("kind") == "python", d["result"]
    assert err.get("name") == "PermissionError", err
    log = kbw.server.log_text()[log0:]
    assert "forbidden system call" not in log and "signal 31" not in log, log


def test_the_run_role_reads_its_view_not_the_cache(kbw):
    """The candidate runs in the run worker, which reads a view of its own (torchview.h), not the build
    cache: a probe in forward lists its view but can neither read a file of another build nor list the
    cache (with Landlock; before, the run role was granted the whole cache and read both)."""
    if os.geteuid() == 0:
        stale = kbw.ext / "stale" / "ext" / "ext.so"   # 65534's since the server's start, readable by it
    else:
        stale = kbw.ext / "readable"
        stale.write_text("another job's")
    src = HEAD.format(salt=os.urandom(8).hex()) + PROBE.format(stale=str(stale), ext=str(kbw.ext))
    (d,) = kbw.run([{"task": "vadd", "language": "kernelbench", "source": src, "timing": "fast"}])
    msg = d["result"]["error"]["message"]
    assert d["result"]["verdict"] == "runtime_error" and "probe;" in msg, d["result"]
    assert f"root {kbw.ext.resolve()}.run/v" in msg and "view: ok" in msg, msg
    if kbw.wait_torch_ready()["layers"]["torch-run"]["landlock"]["active"]:
        assert "cache_file: PermissionError" in msg and "cache_list: PermissionError" in msg, msg


def build_folder_name(src, torch_version, arch):
    """The build folder's name under the artifact root, made as torch_key() makes it
    (server/dispatch/dispatch_torch.c): the hex of sha256 over NUL-terminated parts."""
    h = hashlib.sha256(b"kevald-torch-build\0")
    for part in (src, torch_version, arch):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def tree_state(top):
    """Every entry beneath @top (and @top): its owner, mode and contents, links not followed."""
    out = {}
    for d, dirs, files in os.walk(top):
        for name in [""] + dirs + files:
            p = os.path.join(d, name) if name else d
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_uid, st.st_gid, st.st_mode,
                                            Path(p).read_bytes() if stat.S_ISREG(st.st_mode) else None)
    return out


def test_a_link_planted_as_a_build_folder_is_replaced_not_followed(kbw, tmp_path):
    """A module can write anywhere in the artifact root where Landlock is missing (gVisor), and knows the
    name of a source's build folder (the torch version and the arch are public in /readyz): it plants
    there a link to a folder of root's, or a file, before the source is submitted. The server (root here)
    must neither give the link's target away (chown follows links) nor send the build into it."""
    body = kbw.readyz()
    torch_version = body["torch"]["torch"]
    (gpu,) = body["gpus"]
    arch = gpu["arch"]
    target = tmp_path / "target"   # root's when the test runs as root
    (target / "sub").mkdir(parents=True)
    (target / "keep").write_text("keep")
    os.chmod(target, 0o755)
    before = tree_state(target)
    subs = [sub("correct"), sub("correct")]
    link, plain = (kbw.ext / build_folder_name(s["source"], torch_version, arch) for s in subs)
    os.symlink(target, link)
    plain.write_text("a build's file")
    done = kbw.run(subs)
    for d in done:
        r = d["result"]
        assert r["verdict"] == "correct" and r["compile"]["torch"] == torch_version, r
    assert tree_state(target) == before
    for p in (link, plain):   # the very names the server used: folders now, the builds' own
        st = os.lstat(p)
        assert stat.S_ISDIR(st.st_mode), (p, st)
        if os.geteuid() == 0:
            assert (st.st_uid, st.st_gid) == (65534, 65534), (p, st)
    assert kbw.server.log_text().count("was not a folder (a link or a file a build left?)") >= 2


def test_the_prune_removes_the_oldest_build_and_follows_no_link(kbw):
    import time
    oldest, older, new = (kbw.ext / n for n in kbw.OLD_BUILDS)
    deadline = time.monotonic() + 90 * SLOW   # the first tick prunes (the next ones a minute apart)
    while oldest.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.lexists(oldest), kbw.server.log_tail()
    assert f"removed '{oldest.name}' (least recently used)" in kbw.server.log_text()
    # sized without following its links (else over the bound still, and removed), and kept
    assert (older / "sub" / "f").exists() and (new / "sub" / "f").exists()
    assert os.path.islink(older / "link") and os.path.islink(older / "sub" / "link")
    # what the removed folder's links named is untouched
    assert (kbw.outside / "keep").read_text() == "keep" and os.stat(kbw.outside / "huge").st_size == 17 << 30
    if os.geteuid() == 0:
        assert os.stat(kbw.outside).st_uid == 0 and os.stat(kbw.outside / "keep").st_uid == 0


def test_verdicts_of_plain_pytorch_modules(kbw):
    kinds = ["correct", "incorrect", "raises", "not_a_module", "syntax", "load_inline", "correct_scaled",
             "no_model_new"]
    # "fast" times the first shape set only (timing.shapes "first", the default); the second asks for all
    all_shapes = {"budget_ms": 300, "target_precision": 0.05, "shapes": "all"}
    done = kbw.run([sub(k, timing=all_shapes) if k == "correct_scaled" else sub(k) for k in kinds])
    res = {k: d["result"] for k, d in zip(kinds, done)}
    assert {k: r["verdict"] for k, r in res.items()} == {
        "correct": "correct", "incorrect": "incorrect", "raises": "runtime_error", "not_a_module": "rejected",
        "syntax": "compile_error", "load_inline": "compile_error", "correct_scaled": "correct",
        "no_model_new": "rejected"}, res
    for k in ("correct", "correct_scaled"):
        r = res[k]
        assert r["task"] == "vadd" and r["compile"]["ok"] and r["compile"]["torch"] == "0.0-fake", r
        assert [s["shape"] for s in r["correctness"]["shapes"]] == ["default", "tiny"]
        assert all(s["passed"] and s["trials"] == 5 and s["inputs_intact"] for s in r["correctness"]["shapes"])
        shapes = r["timing"]["shapes"]
        assert [s["shape"] for s in shapes] == (["default", "tiny"] if k == "correct_scaled" else ["default"])
        assert [s["revalidated"] for s in r["correctness"]["shapes"]] == (
            [True, True] if k == "correct_scaled" else [True, None]), r["correctness"]["shapes"]
        assert all(s["candidate"]["median_ms"] > 0 and s["reference"]["median_ms"] > 0 and s["runs_checked"] > 0
                   for s in shapes), shapes
        assert r["timing"]["speedup"] > 0 and r["reward_fields"]["correct"] is True
        assert r["gpu"]["name"] == "Fake GPU (numpy)" and r["task_inline"] is True
    inc = res["incorrect"]
    assert inc["error"]["kind"] == "mismatch" and inc["error"]["shape"] == "default", inc["error"]
    assert inc["correctness"]["shapes"][0]["buffers"][0]["mismatches"] > 0
    assert "first mismatch" in inc["feedback"]
    err = res["raises"]["error"]
    assert err["kind"] == "python" and err["name"] == "ValueError" and "not implemented yet" in err["message"], err
    assert "kernel '" not in res["raises"]["feedback"] and "ValueError" in res["raises"]["feedback"]
    rej = res["not_a_module"]
    assert rej["error"]["kind"] == "submission" and rej["error"]["pointer"] == "/source"
    assert rej["compile"]["error"] == "no_model_new"
    none = res["no_model_new"]
    assert none["error"]["pointer"] == "/source" and "class ModelNew" in none["error"]["message"], none
    assert "compile" not in none   # never built
    syn = res["syntax"]["compile"]
    assert syn["error"] == "import" and "SyntaxError" in syn["log"], syn
    li = res["load_inline"]["compile"]
    assert li["error"] == "compile" and "Error building extension 'vadd_ext'" in li["log"], li


def test_the_judges_exploit_checks(kbw):
    """What the worker names (judge_check.py) reaches the stored result: an output that aliases an
    input, a downcast output, a result cached from the first call, the judge's clock replaced."""
    kinds = {"alias": ("incorrect", "output_alias"), "downcast": ("incorrect", "precision"),
             "caching": ("incorrect", "mismatch"), "tamper": ("rejected", "tamper")}
    done = kbw.run([sub(k) for k in kinds])
    got = {k: (d["result"]["verdict"], d["result"]["error"]["kind"]) for k, d in zip(kinds, done)}
    assert got == kinds, [d["result"] for d in done]


def test_results_are_stored_and_listed(kbw):
    salt = os.urandom(8).hex()
    done = kbw.run([sub("correct", salt=salt, tags={"run_id": "kbw-history"}),
                    sub("incorrect", tags={"run_id": "kbw-history"})])
    # the same source again: its build is a cache hit, and the run worker finds what the build left
    (again,) = kbw.run([sub("correct", salt=salt, tags={"run_id": "kbw-history"})])
    assert again["result"]["verdict"] == "correct" and again["result"]["compile"]["cache_hit"] is True
    assert done[0]["result"]["compile"]["cache_hit"] is False
    with kbw.server.client() as c:
        for d in done + [again]:
            stored = c.get(f"/v1/submissions/{d['id']}").json()
            assert stored["state"] == "done" and stored["result"]["verdict"] == d["result"]["verdict"]
            assert stored["result"]["seed"] == d["result"]["seed"]
        items = c.get("/v1/submissions", params={"run_id": "kbw-history", "limit": 100}).json()["items"]
        assert sorted((i["id"], i["verdict"]) for i in items) == sorted(
            (d["id"], d["result"]["verdict"]) for d in done + [again])
        listed = {i["id"] for i in c.get("/v1/submissions", params={"task": "vadd", "limit": 1000}).json()["items"]}
        assert {d["id"] for d in done + [again]} <= listed


def test_a_cuda_fault_and_a_hang_end_the_worker_and_the_next_job_runs(kbw):
    before = kbw.run_pids()
    (fault,) = kbw.run([sub("cuda_fault")])
    r = fault["result"]
    assert r["verdict"] == "runtime_error" and r["error"]["kind"] == "cuda", r
    assert r["error"]["name"] == "CUDA_ERROR_ILLEGAL_ADDRESS", r["error"]
    (ok,) = kbw.run([sub("correct")])
    assert ok["result"]["verdict"] == "correct"
    # the server's launch limits reach the judge: each shape set's limit for a later forward is
    # launch_factor (1000) x the reference's first call, at least 1 s (judge.CALL_FLOOR_MS), at most the ceiling
    assert all(1000 <= s["launch_limit_ms"] <= LAUNCH_TIMEOUT_MS for s in ok["result"]["correctness"]["shapes"]), ok
    after_fault = kbw.run_pids()
    assert after_fault != before, "the run worker was not replaced after a sticky CUDA error"
    (hang,) = kbw.run([sub("hang")], timeout=JOB_TIMEOUT_S * 4 + 30)
    h = hang["result"]
    assert h["verdict"] == "timeout" and h["error"]["kind"] == "timeout", h
    assert f"{JOB_TIMEOUT_S * 1000} ms deadline" in h["error"]["message"]   # the worker's own watchdog answered
    # a kernel that never ends: the launch limit, not the job's deadline, ends it
    (kh,) = kbw.run([sub("kernel_hang")], timeout=JOB_TIMEOUT_S * 4 + 30)
    e = kh["result"]["error"]
    assert kh["result"]["verdict"] == "timeout" and e["kind"] == "timeout", kh
    assert e["launch_limit_ms"] == LAUNCH_TIMEOUT_MS and "after the forward returned" in e["message"], e
    assert kh["result"]["wall_ms"] < JOB_TIMEOUT_S * 1000 - 1000, kh["result"]   # not the deadline's 6000
    (ok2,) = kbw.run([sub("correct")])
    assert ok2["result"]["verdict"] == "correct"
    assert kbw.run_pids() != after_fault
    log = kbw.server.log_text()
    assert re.search(r"torch-run worker 0 \(pid \d+\) exited: status 3, signal 0", log), log[-3000:]
    assert re.search(r"torch-run worker 0 \(pid \d+\) exited: status 4, signal 0", log), log[-3000:]


def test_kevald_kernelbench_scores_a_runs_folder(kbw, tmp_path):
    runs = tmp_path / "runs" / "kbw_run"
    runs.mkdir(parents=True)
    (runs / "level_1_problem_901_sample_0_kernel.py").write_text(source("correct"))
    (runs / "level_1_problem_901_sample_1_kernel.py").write_text(source("incorrect"))
    out = tmp_path / "report.json"
    p = kbw.server.kevald("kernelbench", str(runs), "--server", kbw.server.url, "--out", str(out),
                          "--timeout", "120", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "level 1: 1 problems, 2 generations" in p.stdout, p.stdout
    assert "verdicts: correct 1 incorrect 1" in p.stdout, p.stdout
    (lv,) = json.loads(out.read_text())["levels"]
    rows = {r["sample"]: r for r in lv["rows"]}
    assert rows[0]["task"] == "vadd" and rows[0]["verdict"] == "correct" and rows[0]["scored"]
    assert rows[0]["speedup_eager"] > 0 and rows[1]["verdict"] == "incorrect" and not rows[1]["scored"]
    assert lv["fast_p"]["eager"]["0"] == 1.0
    with kbw.server.client() as c:
        items = c.get("/v1/submissions", params={"run_id": "kernelbench-kbw_run"}).json()["items"]
    assert sorted(i["verdict"] for i in items) == ["correct", "incorrect"]


def test_real_results_match_the_openapi_document(kbw):
    from test_openapi import SCHEMA_DIR, Checker, Registry
    api = json.loads((SCHEMA_DIR / "openapi.json").read_text())
    done = kbw.run([sub("correct"), sub("incorrect"), sub("raises"), sub("syntax"), sub("not_a_module")])
    with kbw.server.client() as c:
        ck = Checker(api, Registry(SCHEMA_DIR), c)
        for d in done:
            ck.check("get", f"/v1/submissions/{d['id']}")
        ck.check("get", "/readyz")
    assert not ck.failures, "\n".join(ck.failures)


def test_without_the_sandbox(tmp_path):
    """sandbox = false: the server adds --no-sandbox after --role, the worker runs unconfined, says so in
    its layers, and judges as before."""
    s = RealTorchServer(tmp_path / "nosb", ["--sandbox=false"]).start()
    try:
        body = s.readyz()
        for role in ("torch-build", "torch-run"):
            assert body["layers"][role]["seccomp"] == {"active": False, "detail": "disabled (--no-sandbox)"}, body
        done = s.run([sub("correct"), sub("incorrect")])
        assert [d["result"]["verdict"] for d in done] == ["correct", "incorrect"]
    finally:
        assert_stopped_cleanly(s.server)


def test_a_build_folder_that_cannot_be_made_ends_its_job_and_only_it(tmp_module):
    """Where no build folder can be made (here the cache's path names a file for a while), the build is
    not sent: its job ends as internal_error naming why, the build worker is not blamed, and the next
    build, the cache back, is correct."""
    s = RealTorchServer(tmp_module / "nofolder").start()
    try:
        os.rename(s.ext, s.dir / "ext-away")
        s.ext.write_text("not a folder")
        (failed,) = s.run([sub("correct")])
        r = failed["result"]
        assert r["verdict"] == "internal_error", r
        assert "the build folder could not be made in the build cache: Not a directory" in r["error"]["message"], r
        os.unlink(s.ext)
        os.rename(s.dir / "ext-away", s.ext)
        (ok,) = s.run([sub("correct")])
        assert ok["result"]["verdict"] == "correct", ok["result"]
        assert "could not send a job" not in s.server.log_text()
        assert all(w["state"] != "failed" for w in s.readyz()["torch"]["build"]["workers"])
    finally:
        assert_stopped_cleanly(s.server)


# Issue 29: one job per kevald-torch process. What a candidate changes in the interpreter (a patched
# inherited Tensor method, torch.utils.cpp_extension, a global switch) must not reach the next job.
PATCH_GT = ("import torch\n"   # inherited (torch._C.TensorBase's): setting it adds a name to Tensor
            "torch.Tensor.__gt__ = lambda self, other: self.__ne__(self)\n")   # every element "not greater"
# The same change made where the judge's tamper check does not look: the inherited function's body
# replaced in place (the stand-in's TensorBase.__gt__ is Python; the function object stays the same).
PATCH_GT_CODE = ("import torch\n"
                 "torch._TensorBase.__gt__.__code__ = (lambda self, other: self.__ne__(self)).__code__\n")
PATCH_BUILD = ("import torch.utils.cpp_extension as cpp\n"
               "cpp.load_inline = cpp.load = lambda *args, **kwargs: None\n")   # every later build "succeeds"


def worker_pids(log, role, since=0):
    """The pids of @role's workers that said they were ready, in the server's log past offset @since."""
    return [int(p) for p in re.findall(rf"{role} worker \d+ ready \(pid (\d+)\)", log[since:])]


def test_a_patch_to_an_inherited_tensor_method_does_not_reach_the_next_job(kbw):
    """The candidate's import sets torch.Tensor.__gt__ (a name Tensor inherits), which the judge's
    comparison uses: the tamper check rejects it, naming it. The same done where the check does
    not look (the body of TensorBase.__gt__ replaced in place) is not rejected; the next
    submitter's wrong module must still be incorrect, its mismatches counted."""
    (patched,) = kbw.run([dict(sub("correct"), source=PATCH_GT + source("correct"))])
    r = patched["result"]
    assert (r["verdict"], r["error"]["kind"]) == ("rejected", "tamper"), r
    assert "replaced Tensor.__gt__," in r["error"]["message"], r["error"]
    (patched,) = kbw.run([dict(sub("correct"), source=PATCH_GT_CODE + source("correct"))])
    assert patched["result"]["verdict"] in ("correct", "incorrect"), patched["result"]
    (wrong,) = kbw.run([sub("incorrect")])
    r = wrong["result"]
    assert r["verdict"] == "incorrect" and r["error"]["kind"] == "mismatch", r
    assert r["correctness"]["shapes"][0]["buffers"][0]["mismatches"] > 0, r["correctness"]


def test_a_patched_cpp_extension_does_not_reach_the_next_build(kbw):
    """A module that replaces torch.utils.cpp_extension.load_inline at import: the next source's
    load_inline still builds (and fails, in the stand-in that has no compilers)."""
    (patched,) = kbw.run([dict(sub("correct"), source=PATCH_BUILD + source("correct"))])
    assert patched["result"]["compile"]["ok"], patched["result"]
    (li,) = kbw.run([sub("load_inline")])
    c = li["result"]["compile"]
    assert li["result"]["verdict"] == "compile_error", li["result"]
    assert c["error"] == "compile" and "Error building extension 'vadd_ext'" in c["log"], c


def test_every_job_gets_a_fresh_worker_and_a_restart_is_no_failure(kbw):
    """A run worker exits 0 after each JOB (the run RESULT says "exiting": true) and the dispatcher
    starts a fresh process at once: several jobs in a row all complete, each run on a run worker
    with a new pid, and no exit counts as a failure (no backoff, no pool marked failed). A build
    worker runs each module in a child of its own and serves build after build: the same build
    workers answer them all and none exits."""
    since = len(kbw.server.log_text())
    builders = sorted(w["pid"] for w in kbw.wait_torch_ready()["torch"]["build"]["workers"])
    n = 4
    done = kbw.run([sub("correct") if i % 2 == 0 else sub("incorrect") for i in range(n)])
    assert [d["result"]["verdict"] for d in done] == ["correct", "incorrect"] * (n // 2), [d["result"] for d in done]
    kbw.wait_torch_ready()
    log = kbw.server.log_text()
    exits = re.findall(r"torch-run worker 0 \(pid (\d+)\) exited: status (\d+), signal (\d+)", log[since:])
    assert len(exits) >= n and all(s == "0" and g == "0" for _, s, g in exits), exits
    assert len({p for p, _, _ in exits}) == len(exits), exits     # a new process for every job
    run_ready = worker_pids(log, "torch-run", since)
    assert len(run_ready) >= n and len(set(run_ready)) == len(run_ready), run_ready
    assert not re.search(r"torch-build worker \d+ \(pid \d+\) exited", log[since:]), log[since:][-3000:]
    assert not re.search(r"restarting torch-(run|build) worker", log[since:]), log[since:][-3000:]
    body = kbw.readyz()
    assert body["torch"]["run"][0]["pid"] not in [int(p) for p, _, _ in exits]
    assert sorted(w["pid"] for w in body["torch"]["build"]["workers"]) == builders, body["torch"]["build"]
    assert all(w["state"] != "failed" for w in body["torch"]["build"]["workers"]), body["torch"]


def test_sources_that_end_or_signal_their_build_process_fail_only_their_build(kbw):
    """A module runs in a child of its build worker (confined to its build folder): ending it at import
    (os._exit, a signal to itself) ends only that child, and the build is a compile_error whose log says
    so; signalling the build worker itself (its parent, or the whole process group) is refused by
    Landlock's signal scoping where the kernel has it (ABI 6). Either way the build worker answers and
    serves on: it does not exit, the build pool is not marked failed, and the server lives on."""
    since = len(kbw.server.log_text())
    salt = os.urandom(8).hex()
    tail = f"# {salt}\n\n\nclass ModelNew:\n    pass\n"
    srcs = {"exits": "import os\nprint('leaving', flush=True)\nos._exit(1)\n" + tail,
            "killed": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + tail}
    scoped = "signals and abstract unix sockets scoped" in kbw.readyz()["layers"]["torch-build"]["landlock"]["detail"]
    if scoped:
        srcs["signals_parent"] = ("import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                                  "    print('parent: signalled', flush=True)\nexcept OSError as e:\n"
                                  "    print('parent:', type(e).__name__, flush=True)\n"
                                  "os.killpg(0, signal.SIGKILL)\n" + tail)
    done = kbw.run([{"task": "vadd", "language": "kernelbench", "source": src} for src in srcs.values()], timeout=60)
    res = {k: d["result"] for k, d in zip(srcs, done)}
    assert {k: r["verdict"] for k, r in res.items()} == {k: "compile_error" for k in srcs}, res
    assert all(r["compile"]["error"] == "import" for r in res.values()), res
    assert "leaving" in res["exits"]["compile"]["log"]
    assert "the build process exited with status 1 without an answer" in res["exits"]["compile"]["log"]
    assert "the build process was killed by SIGKILL without an answer" in res["killed"]["compile"]["log"]
    if scoped:
        log = res["signals_parent"]["compile"]["log"]
        assert "parent: PermissionError" in log and "killed by SIGKILL" in log, log
    kbw.wait_torch_ready()
    text = kbw.server.log_text()[since:]
    # only the modules' own children ended: no build worker exited (each serves build after build)
    assert not re.search(r"torch-build worker \d+ \(pid \d+\) exited", text), text[-3000:]
    assert all(w["state"] != "failed" for w in kbw.readyz()["torch"]["build"]["workers"])
    assert kbw.server.proc.poll() is None, "kevald died"
