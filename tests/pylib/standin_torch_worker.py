#!/usr/bin/env python3
"""
The stand-in for kevald-torch (the kernelbench worker, docs/kernelbench.md)
that the tests without a GPU or PyTorch use. It speaks the contract's frame
protocol (common/frame.h through frames.py) on fds 0 and 1: HELLO for its
role, then one RESULT per JOB until end of input or SHUTDOWN. Nothing is
imported, built or run; markers in the candidate's source say what it reports.

The supervisor runs it as `<torch_python> <libexec>/kevald-torch --role
build|run [--no-sandbox]`. A test puts it in place with install(LIBEXEC,
knobs): this file copied as LIBEXEC/kevald-torch, frames.py beside it, the
knobs in LIBEXEC/fake_torch.json; it logs to LIBEXEC/fake_torch.log (one JSON
object a line, O_APPEND):

  {"ev": "hello", "pid", "role", "argv", "env": {the KEVALD_* variables and CUDA_VISIBLE_DEVICES}}
  {"ev": "build", "pid", "id", "build_dir", "key", "marker", "deadline_ms", "arch", "t"} on a build JOB
  {"ev": "run", "pid", "id", "gpu", "marker", "build_dir", "built", "ext_key" (the build folder
   fake_ext/fake_ext.so names), "view" (every path beneath build_dir), "env_root", "blob_ok", "shapes",
   "start", "end", "deadline_ms", "job_keys"} on a run JOB, before its RESULT
  {"ev": "exit", "pid", "code"}, {"ev": "eof"|"shutdown", "pid"}

Knobs (fake_torch.json): work_s (0.05) seconds each JOB takes; torch ("2.9.0+fake")
the version the build HELLO says; hello_fail (false): HELLO "ok": false and exit 1 (true: both roles;
"build" or "run": that role only).

Markers: `KBV_<marker>` anywhere in the candidate's source.
  build role: compile_error (error "compile", a compiler's log), import_error
    ("import"), no_model_new ("no_model_new"), build_timeout ("timeout"),
    build_die (exit 1 without a RESULT); anything else builds: it writes
    BUILD_DIR/fake_ext/fake_ext.so (naming its build folder), fake_ext/main.cpp and model_new.py
    (the source) and answers ok.
  run role: correct (the default; speedup 1.0 on every shape set), s<N> (speedup N/100; with
    KBC_<M> in the source too, timing.speedup_compile M/100: a torch.compile baseline),
    incorrect (a mismatch), runtime_error ("runtime_error", "exiting": "sticky", exit 3),
    timeout ("timeout", "exiting": "timeout", exit 4), run_die (exit 1 without a RESULT),
    run_forbidden (exit 5 without a RESULT, as the real worker's system-call filter ends it when the
    candidate made the call), run_sigsys (killed by SIGSYS without a RESULT: the call was the worker's),
    hang (no RESULT: the watchdog must kill it), wrong_id (a RESULT naming another job) and
    forged_speedup (a speedup of 1e308 over equal medians): the supervisor must believe neither.
"""
import os
import re
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # frames.py, beside this file
import frames  # noqa: E402

KNOBS = {"work_s": 0.05, "torch": "2.9.0+fake", "hello_fail": False}
LOG_NAME, KNOBS_NAME = "fake_torch.log", "fake_torch.json"
BUILD_ERRORS = {"compile_error": "compile", "import_error": "import", "no_model_new": "no_model_new",
                "build_timeout": "timeout"}
REF_MS = 0.5


def install(libexec, knobs=None):
    """Put the stand-in in @libexec as kevald-torch, frames.py beside it, @knobs in fake_torch.json.
    Returns the path of its log."""
    frames.install_standin(__file__, libexec, "kevald-torch", KNOBS_NAME, knobs)
    return Path(libexec) / LOG_NAME


def marker(source):
    m = re.search(r"KBV_([A-Za-z0-9_]+)", source)
    return m.group(1) if m else "correct"


class StandIn:
    def __init__(self, role):
        self.role = role
        self.dir = os.path.dirname(os.path.abspath(sys.argv[0]))
        self.pid = os.getpid()
        self.knobs = frames.load_knobs(self.dir, KNOBS_NAME, KNOBS)
        self.gpu = int(os.environ.get("CUDA_VISIBLE_DEVICES") or 0)
        self.out_fd = os.dup(1)

    def log(self, **ev):
        ev.setdefault("pid", self.pid)
        frames.log_line(os.path.join(self.dir, LOG_NAME), ev)

    def exit(self, code):
        self.log(ev="exit", code=code)
        os._exit(code)

    def hello(self):
        layers = {"sandbox": {"active": False, "detail": "fake kevald-torch (tests/pylib stand-in)"}}
        common = {"pid": self.pid, "ok": True, "python": "3.12.0", "torch": self.knobs["torch"], "cuda": "13.0",
                  "layers": layers}
        if self.role == "build":
            return {"role": "torch-build", **common}
        return {"role": "torch-run", **common, "device": 0, "name": "Fake GPU (kevald tests)", "arch": "sm_90a"}

    def build(self, job, blob):
        src = blob.decode("utf-8", "replace")
        mark = marker(src)
        bdir = job.get("build_dir") or ""
        self.log(ev="build", id=job.get("id"), build_dir=bdir, key=os.path.basename(bdir), marker=mark,
                 deadline_ms=job.get("deadline_ms"), arch=job.get("arch"), t=time.monotonic())
        time.sleep(float(self.knobs["work_s"]))
        if mark == "build_die":
            self.exit(1)
        res = {"id": job.get("id"), "ok": True, "error": None, "log": "", "wall_ms": 12.5}
        if mark in BUILD_ERRORS:
            res.update(ok=False, error=BUILD_ERRORS[mark],
                       log=f"fake: {mark}: error: identifier \"undefined_xq\" is undefined")
        else:   # as load_inline leaves it: the extension beside its sources and objects
            Path(bdir, "fake_ext").mkdir(exist_ok=True)
            Path(bdir, "fake_ext", "fake_ext.so").write_text(f"\x7fELF fake extension of {os.path.basename(bdir)}")
            Path(bdir, "fake_ext", "main.cpp").write_text(src)
            Path(bdir, "model_new.py").write_text(src)
        return res

    def run_job(self, job, blob):
        srcs = job.get("sources") or {}
        c, r = srcs.get("candidate") or {}, srcs.get("reference") or {}
        cand = blob[c.get("offset", 0):c.get("offset", 0) + c.get("size", 0)].decode("utf-8", "replace")
        ref = blob[r.get("offset", 0):r.get("offset", 0) + r.get("size", 0)].decode("utf-8", "replace")
        blob_ok = (c.get("offset") == 0 and r.get("offset") == c.get("size")
                   and c.get("size", 0) + r.get("size", 0) == len(blob) and "class ModelNew" in cand
                   and "class Model" in ref)
        mark = marker(cand)
        bdir = job.get("build_dir") or ""
        shapes = job.get("shapes") or []
        start = time.monotonic()
        if mark == "hang":
            self.log(ev="run", id=job.get("id"), gpu=self.gpu, marker=mark, start=start, end=None)
            time.sleep(3600)
        time.sleep(float(self.knobs["work_s"]))
        end = time.monotonic()
        ext = os.path.join(bdir, "fake_ext", "fake_ext.so")
        try:
            with open(ext) as f:
                ext_key = f.read().rsplit(" ", 1)[-1]
        except OSError:
            ext_key = None
        view = sorted(os.path.relpath(os.path.join(d, n), bdir) for d, ds, fs in os.walk(bdir) for n in ds + fs)
        self.log(ev="run", id=job.get("id"), gpu=self.gpu, marker=mark, build_dir=bdir, built=ext_key is not None,
                 ext_key=ext_key, view=view, env_root=os.environ.get("KEVALD_TORCH_EXT_ROOT"), blob_ok=blob_ok,
                 shapes=shapes,
                 start=start, end=end, deadline_ms=job.get("deadline_ms"), job_keys=sorted(job))
        if mark == "run_die":
            self.exit(1)
        if mark == "run_forbidden":
            self.exit(5)
        if mark == "run_sigsys":
            signal.signal(signal.SIGSYS, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSYS)
        names = [s.get("name", "default") for s in shapes] or ["default"]
        base = {"id": job.get("id"), "seed": job.get("seed"), "gpu_busy_ms": (end - start) * 1000,
                "wall_ms": (end - start) * 1000, "gpu": {"name": "Fake GPU (kevald tests)", "index": 0},
                "phases_ms": {"correctness": 1.0, "timing": 2.0}}
        speedup = int(mark[1:]) / 100.0 if re.fullmatch(r"s[0-9]+", mark) and int(mark[1:]) > 0 else 1.0
        if mark == "correct" or re.fullmatch(r"s[0-9]+", mark):
            comp = re.search(r"KBC_([0-9]+)", cand)  # a torch.compile baseline: speedup over it N/100
            base.update(verdict="correct", error=None,
                        correctness={"passed": True, "shapes": [{"shape": n, "passed": True} for n in names]},
                        timing={"speedup": speedup, "shapes": [
                            {"shape": n, "speedup": speedup, "stop": "precision",
                             "candidate": {"median_ms": REF_MS / speedup, "trials": 10},
                             "reference": {"median_ms": REF_MS, "trials": 10},
                             "roofline": {"min_ms": None, "suspicious": False}} for n in names]})
            if comp and int(comp.group(1)) > 0:
                base["timing"]["speedup_compile"] = int(comp.group(1)) / 100.0
        elif mark == "incorrect":
            base.update(verdict="incorrect", timing=None,
                        correctness={"passed": False, "shapes": [{"shape": names[0], "passed": False}]},
                        error={"kind": "mismatch", "shape": names[0],
                               "message": "fake: 3 of 4096 elements of the output differ from the reference"})
        elif mark == "runtime_error":
            base.update(verdict="runtime_error", timing=None, exiting="sticky",
                        error={"kind": "cuda", "message": "fake: CUDA error: an illegal memory access"})
        elif mark == "timeout":
            base.update(verdict="timeout", timing=None, exiting="timeout",
                        error={"kind": "timeout", "message": "fake: the forward pass did not finish"})
        elif mark == "wrong_id":  # a RESULT for another job: the supervisor must kill us
            base.update(id=(job.get("id") or 0) + 1000000, verdict="correct", error=None,
                        correctness={"passed": True, "shapes": [{"shape": n, "passed": True} for n in names]},
                        timing={"speedup": 1.0, "shapes": []})
        elif mark == "forged_speedup":  # a speedup its own medians (1 ms and 1 ms) do not back
            base.update(verdict="correct", error=None,
                        correctness={"passed": True, "shapes": [{"shape": n, "passed": True} for n in names]},
                        timing={"speedup": 1e308, "shapes": [
                            {"shape": n, "speedup": 1e308, "stop": "precision", "candidate": {"median_ms": 1.0},
                             "reference": {"median_ms": 1.0}} for n in names]})
        else:
            base.update(verdict="internal_error", error={"kind": "internal", "message": f"fake: marker {mark!r}"})
        return base

    def main(self):
        self.log(ev="hello", role=self.role, argv=sys.argv[1:],
                 env={k: v for k, v in os.environ.items() if k.startswith("KEVALD_") or k == "CUDA_VISIBLE_DEVICES"})
        fail = self.knobs["hello_fail"]
        if fail is True or fail == self.role:
            frames.write(self.out_fd, frames.HELLO, {"role": "torch-" + self.role, "pid": self.pid, "ok": False,
                                                     "error": {"stage": "import", "message": "fake: no torch"}})
            self.exit(1)
        frames.write(self.out_fd, frames.HELLO, self.hello())
        while True:
            fr = frames.read(0)
            if fr is None:
                self.log(ev="eof")
                return 0
            ftype, job, blob = fr
            if ftype == frames.SHUTDOWN:
                self.log(ev="shutdown")
                return 0
            if ftype != frames.JOB or job.get("kind") != self.role:
                self.log(ev="unexpected_frame", type=ftype, kind=job.get("kind") if isinstance(job, dict) else None)
                return 2
            res = self.build(job, blob) if self.role == "build" else self.run_job(job, blob)
            frames.write(self.out_fd, frames.RESULT, res)
            if res.get("exiting"):
                self.exit(3 if res["verdict"] == "runtime_error" else 4)


if __name__ == "__main__":
    args = sys.argv[1:]
    role = args[args.index("--role") + 1] if "--role" in args and args.index("--role") + 1 < len(args) else None
    if role not in ("build", "run"):
        sys.stderr.write("kevald-torch (stand-in): --role build|run\n")
        sys.exit(1)
    sys.exit(StandIn(role).main())
