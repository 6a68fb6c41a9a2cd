#!/usr/bin/env python3
"""
drive - kevald-torch run directly, without the server, on the hand-written
ModelNew samples beside it (samples/) against two small references
(ref_softmax.py, ref_linear_relu.py): each sample goes through a build
worker (--role build) and, when it built, a run worker (--role run) that
judges it on two shape sets; a worker that exits (sticky error, timeout,
tamper) is started again for the next sample. Prints one line per sample
(expected and actual verdict, error, medians, speedup, clock) and a summary,
and writes everything (HELLOs, RESULTs, exit statuses, wall times) to
OUT/torch_gpu.json. Run by run.sh; needs a GPU and PyTorch.
"""
import argparse
import hashlib
import json
import os
import queue
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LIBEXEC = Path(os.environ.get("KEVALD_LIBEXEC", ROOT / "build" / "worker"))
sys.path.insert(0, str(LIBEXEC))
from kevald_torch import frames  # noqa: E402

SOFTMAX = ("ref_softmax.py", [{"name": "default", "constants": {"batch_size": 512, "dim": 8192}, "atol": 1e-4, "rtol": 1e-4},
                              {"name": "small", "constants": {"batch_size": 64, "dim": 1000}, "atol": 1e-4, "rtol": 1e-4}])
LINEAR = ("ref_linear_relu.py", [{"name": "default", "constants": {"batch_size": 256, "in_features": 1024, "out_features": 512},
                                  "atol": 1e-4, "rtol": 1e-4},
                                 {"name": "small", "constants": {"batch_size": 16, "in_features": 100, "out_features": 48},
                                  "atol": 1e-4, "rtol": 1e-4}])
# sample, reference, build error expected (None: builds), verdict, error kind, deadline_ms
SAMPLES = [
    ("correct_cuda.py", SOFTMAX, None, "correct", None, 60000),
    ("plain_torch.py", SOFTMAX, None, "correct", None, 60000),
    ("linear_relu_fused.py", LINEAR, None, "correct", None, 60000),
    ("stream_trick.py", SOFTMAX, None, "correct", None, 60000),
    ("wrong_cuda.py", SOFTMAX, None, "incorrect", "mismatch", 60000),
    ("caching.py", SOFTMAX, None, "incorrect", "mismatch", 60000),
    ("alias_input.py", SOFTMAX, None, "incorrect", "output_alias", 60000),
    ("downcast.py", SOFTMAX, None, "incorrect", "precision", 60000),
    ("downcast_cast_back.py", SOFTMAX, None, "correct", None, 60000),
    ("linear_relu_wrong_init.py", LINEAR, None, "incorrect", "mismatch", 60000),
    ("raises.py", SOFTMAX, None, "runtime_error", "python", 60000),
    ("tamper.py", SOFTMAX, None, "rejected", "tamper", 60000),
    ("tamper_inherited.py", SOFTMAX, None, "rejected", "tamper", 60000),
    ("tamper_mode.py", SOFTMAX, None, "rejected", "tamper", 60000),
    ("fault_cuda.py", SOFTMAX, None, "runtime_error", "cuda", 60000),
    ("hang_cuda.py", SOFTMAX, None, "timeout", "timeout", 8000),
    ("no_model_new.py", SOFTMAX, "no_model_new", None, None, 60000),
    ("compile_error.py", SOFTMAX, "compile", None, None, 60000),
]


class Worker:
    def __init__(self, python, role, sandbox, env):
        self.role = role
        args = [python, str(LIBEXEC / "kevald-torch"), "--role", role] + ([] if sandbox else ["--no-sandbox"])
        wrap = os.environ.get("KEVALD_TORCH_WRAP_RUN", "").split() if role == "run" else []
        if wrap:   # e.g. strace: the worker's parent is then the wrapper, not us
            args = wrap + args
            env = {k: v for k, v in env.items() if k != "KEVALD_PARENT_PID"}
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, env=env)
        self.hello = self.read(120)
        if self.hello is None or self.hello[0] != frames.HELLO:
            raise RuntimeError(f"{role}: no HELLO (exit {self.p.wait()})")
        self.hello = self.hello[1]

    def read(self, timeout):
        fd = self.p.stdout.fileno()
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            return None
        fr = frames.read(fd)
        if fr is None:
            return None
        t, body, blob = fr
        return t, json.loads(body), blob

    def job(self, obj, blob, timeout):
        self.p.stdin.write(frames.pack(frames.JOB, obj, blob))
        self.p.stdin.flush()
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            fr = self.read(max(0.1, t_end - time.monotonic()))
            if fr is None:
                return None
            if fr[0] == frames.RESULT:
                return fr[1]
        return None

    def wait(self, timeout=30):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()

    def close(self):
        try:
            self.p.stdin.write(frames.pack(frames.SHUTDOWN, b""))
            self.p.stdin.close()
        except OSError:
            pass
        return self.wait()


def summary_line(res):
    t = res.get("timing") or {}
    parts = []
    for s in t.get("shapes", []):
        parts.append(f"{s['shape']} {s['candidate']['median_ms']:.4f}/{s['reference']['median_ms']:.4f} ms "
                     f"({s.get('clock')}, {s['candidate']['trials']} trials, stop {s.get('stop')})")
    sp = t.get("speedup")
    return (f"speedup {sp:.3f}x; " if sp else "") + "; ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=os.environ.get("KEVALD_TORCH_PYTHON", "python3"))
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/kevald-torch-out"))
    ap.add_argument("--ext-root", default="/tmp/kevald-torch-ext")
    ap.add_argument("--only", default="", help="comma-separated parts of sample names")
    ap.add_argument("--keep-ext", action="store_true", help="keep the artifact root of an earlier run "
                    "(load_inline then finds its builds up to date)")
    ap.add_argument("--build-workers", type=int, default=4)
    a = ap.parse_args()
    sandbox = not a.no_sandbox
    os.makedirs(a.out, exist_ok=True)
    if not a.keep_ext:
        shutil.rmtree(a.ext_root, ignore_errors=True)
    os.makedirs(a.ext_root, exist_ok=True)
    os.chmod(a.ext_root, 0o777)
    # the environment kevald serve gives its workers (server/dispatch/proctab.c), not this shell's:
    # the H200 host's CC=/opt/gcc/bin/gcc became nvcc's -ccbin in every load_inline, a compiler
    # outside what the build role's sandbox may run ("gcc: Permission denied")
    a.python = shutil.which(a.python) or a.python   # by this shell's PATH, not the workers' /usr/bin:/bin
    env = {k: os.environ[k] for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "KEVALD_CUDA_HOME")
           if k in os.environ}
    env.update(PATH="/usr/bin:/bin", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    env.update(KEVALD_PARENT_PID=str(os.getpid()), KEVALD_LOG_LEVEL="info",
               KEVALD_TORCH_EXT_ROOT=a.ext_root, KEVALD_CONFINE_LIB=str(LIBEXEC / "libkevald-confine.so"),
               KEVALD_GPU_INDEX=os.environ.get("KEVALD_GPU_INDEX", "0"))
    report = {"sandbox": sandbox, "samples": [], "hellos": []}
    chosen = [smp for smp in SAMPLES if not a.only or any(o and o in smp[0] for o in a.only.split(","))]
    t_all = time.monotonic()
    built = build_all(a, sandbox, env, chosen, report)
    report["build_wall_s"] = time.monotonic() - t_all
    print(f"== built {len(chosen)} samples in {report['build_wall_s']:.1f} s with {a.build_workers} build workers",
          flush=True)
    runner = None
    passed = total = 0
    for i, (name, (ref_file, shapes), want_build, want_verdict, want_kind, deadline) in enumerate(chosen):
        total += 1
        src = (HERE / "samples" / name).read_bytes()
        ref = (HERE / ref_file).read_bytes()
        entry = built.get(name, {"sample": name, "build_dir": "", "build_s": 0.0})
        build_dir = entry["build_dir"]
        bres = entry.get("build")
        got_build = None if bres and bres.get("ok") else (bres or {}).get("error", "no RESULT")
        ok = got_build == want_build
        line = f"build {got_build or 'ok'} ({entry['build_s']:.1f} s)"
        if want_build is None and got_build is None and "fatal" not in report:
            if runner is None:
                runner = Worker(a.python, "run", sandbox, env)
                report["hellos"].append(runner.hello)
                if not runner.hello.get("ok"):
                    print(f"RUN WORKER FAILED TO START: {json.dumps(runner.hello)}", flush=True)
                    report["fatal"] = runner.hello
                    runner.wait()
                    runner = None
            if runner is not None:
                job = {"id": 1000 + i, "kind": "run", "seed": os.urandom(8).hex(), "mode": "full",
                       "deadline_ms": deadline,
                       "timing": {"budget_ms": 1000, "target_precision": 0.01, "min_trials": 6, "max_trials": 300,
                                  "warmup": 2},
                       "correctness_trials": 3, "build_dir": build_dir,
                       "sources": {"candidate": {"offset": 0, "size": len(src)},
                                   "reference": {"offset": len(src), "size": len(ref)}},
                       "shapes": shapes}
                t1 = time.monotonic()
                res = runner.job(job, src + ref, deadline / 1000 + 30)
                entry["run"] = res
                entry["run_s"] = time.monotonic() - t1
                if res is None or res.get("exiting"):
                    entry["run_exit"] = runner.wait()
                    runner = None
                verdict = res.get("verdict") if res else "no RESULT"
                kind = ((res or {}).get("error") or {}).get("kind")
                ok = ok and verdict == want_verdict and kind == want_kind
                err = (res or {}).get("error") or {}
                line += f"; {verdict}" + (f" ({kind}{' ' + err['name'] if err.get('name') else ''}: "
                                          f"{(err.get('message') or '')[:100]})" if err else "")
                if res and res.get("verdict") == "correct":
                    line += "; " + summary_line(res)
                if "run_exit" in entry:
                    line += f"; worker exit {entry['run_exit']}"
                line += f"; run {entry['run_s']:.1f} s"
            else:
                ok = False
                line += "; no run worker"
        elif bres and not bres.get("ok"):
            line += f"; log: {(bres.get('log') or '')[-160:]!r}"
        entry["pass"] = ok
        passed += ok
        report["samples"].append(entry)
        want = want_build or f"{want_verdict}/{want_kind or '-'}"
        print(f"{'PASS' if ok else 'FAIL'}  {name:28s} want {want:28s} got {line}", flush=True)
    if runner:
        runner.close()
    report["wall_s"] = time.monotonic() - t_all
    report["passed"], report["total"] = passed, total
    with open(os.path.join(a.out, "torch_gpu.json"), "w") as f:
        json.dump(report, f, indent=1)
    for h in report["hellos"][:2]:
        print(f"HELLO {h.get('role')}: ok {h.get('ok')} torch {h.get('torch')} cuda {h.get('cuda')} "
              f"{h.get('name', '')} {h.get('arch', '')}", flush=True)
        for layer, v in sorted((h.get("layers") or {}).items()):
            print(f"    {layer:13s} {'on ' if v.get('active') else 'OFF'} {v.get('detail', '')[:150]}")
    print(f"{passed} of {total} samples got the verdict expected ({'sandboxed' if sandbox else 'NO SANDBOX'}); "
          f"{report['wall_s']:.1f} s in all", flush=True)
    return 0 if passed == total and "fatal" not in report else 1


def build_all(a, sandbox, env, chosen, report):
    """Every sample through --build-workers build workers at once (the
    dispatcher's build pool); returns {sample: entry}."""
    todo = queue.Queue()
    for smp in chosen:
        todo.put(smp)
    built, lock = {}, threading.Lock()
    arch = os.environ.get("KEVALD_TORCH_ARCH", "sm_90a")

    def work():
        w = None
        while "fatal" not in report:
            try:
                name = todo.get_nowait()[0]
            except queue.Empty:
                break
            src = (HERE / "samples" / name).read_bytes()
            entry = {"sample": name, "build_dir": os.path.join(a.ext_root, hashlib.sha256(src).hexdigest()[:16])}
            t0 = time.monotonic()
            try:
                if w is None:
                    w = Worker(a.python, "build", sandbox, env)
                    with lock:
                        report["hellos"].append(w.hello)
                    if not w.hello.get("ok"):
                        with lock:
                            if "fatal" not in report:
                                print(f"BUILD WORKER FAILED TO START: {json.dumps(w.hello)}", flush=True)
                            report["fatal"] = w.hello
                        w.wait()
                        w = None
                        raise RuntimeError("no build worker")
                res = w.job({"id": len(built) + 1, "kind": "build", "deadline_ms": 300000,
                             "build_dir": entry["build_dir"], "arch": arch}, src, 330)
                entry["build"] = res
                if res is None or res.get("exiting") or res.get("error") == "timeout":   # it exits: a fresh one
                    entry["build_exit"] = w.wait()
                    w = None
            except (RuntimeError, OSError) as e:
                entry["build_error"] = str(e)
            entry["build_s"] = time.monotonic() - t0
            with lock:
                built[name] = entry
        if w:
            w.close()

    threads = [threading.Thread(target=work) for _ in range(max(1, a.build_workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return built


if __name__ == "__main__":
    sys.exit(main())
