#!/usr/bin/env python3
"""Side-by-side reference point: evaluate N distinct versions of one small
kernel (ReLU over 1M floats) the way PyTorch-extension harnesses
(KernelBench) do it, and the way kevald does it.

  load_inline: torch.utils.cpp_extension.load_inline (nvcc + g++ + ninja, a
               fresh build directory under /tmp per source), run, compare with
               torch.relu, time 100 launches with CUDA events (KernelBench's
               default trial count), in this process.
  cupy:        cupy.RawKernel (NVRTC in the harness process, no isolation),
               the same checks and 100 event-timed launches.
  kevald eval: `kevald eval --task FILE --source F --plan P` per source (a
               fresh supervisor, compile worker and GPU worker each time).
  kevald HTTP: one server (started here with --kevald, or --server URL), all N
               sources in one batch POST, long-polls; time per evaluation =
               wall clock / N (the service's steady state).

Each source differs by a constant (no build cache can hide the compile).
Prints a table with seconds per evaluation and the ratios; --json writes it.

torch is needed only for the load_inline column: without torch, CUDA, ninja
or a host compiler the column says what is missing and the kevald columns
still run. Python 3 standard library otherwise.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

B, D = 1024, 1024  # 1M floats

CUDA_SRC = r'''
#include <torch/extension.h>

__global__ void relu_kernel_%(tag)s(const float* __restrict__ x, float* __restrict__ y, long long n)
{
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
                float v = x[i] * %(one)s;
                y[i] = v > 0.0f ? v : 0.0f;
        }
}

torch::Tensor relu_fwd(torch::Tensor x)
{
        auto y = torch::empty_like(x);
        long long n = x.numel();
        relu_kernel_%(tag)s<<<(unsigned)((n + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
        return y;
}
'''
CPP_SRC = "torch::Tensor relu_fwd(torch::Tensor x);"

KEVALD_SRC = r'''// kevald side, version %(tag)s
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
                float v = x[i] * %(one)s;
                y[i] = v > 0.0f ? v : 0.0f;
        }
}
'''
KEVALD_PLAN = [{"kernel": "relu", "grid": ["ceil_div(B * D, 256)"], "block": [256],
                "args": ["x", "y", {"type": "u64", "value": "B * D"}]}]


def one_constant(k):
    # 1.0 written differently each time: the value is the same, the text is not
    return "(1.0f + 0.0f * %d.0f)" % (k + 1)


def task_doc(tasks_dir):
    """The relu task with one 1M-float shape set and its reference inline."""
    with open(os.path.join(tasks_dir, "level1", "activation", "l1_19_relu.json")) as fh:
        t = json.load(fh)
    with open(os.path.join(tasks_dir, "level1", "activation", t["reference"]["source_file"])) as fh:
        ref_src = fh.read()
    t["name"] = "bench_relu_1m"
    t["shapes"] = [{"name": "default", "B": B, "D": D}]
    t["reference"] = dict(t["reference"])
    del t["reference"]["source_file"]
    t["reference"]["source"] = ref_src
    t.pop("example", None)
    t.pop("provenance", None)
    return t


# ---------------------------------------------------------------- load_inline

def check_toolchain():
    missing = []
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return ["torch (%s)" % e]
    import torch
    from torch.utils import cpp_extension
    if not torch.cuda.is_available():
        missing.append("a CUDA device for torch")
    if not cpp_extension.is_ninja_available():
        missing.append("ninja")
    cxx = os.environ.get("CXX", "c++")
    if not shutil.which(cxx) and not shutil.which("g++"):
        missing.append("a host C++ compiler (c++/g++)")
    home = cpp_extension.CUDA_HOME
    if not home or not os.path.exists(os.path.join(home, "bin", "nvcc")):
        missing.append("nvcc (CUDA_HOME=%s)" % home)
    return missing


def run_load_inline(n, deadline_s, build_root):
    import torch
    from torch.utils import cpp_extension
    x = torch.randn(B * D, device="cuda")
    want = torch.relu(x)
    per = []
    rows = []
    t_start = time.time()
    for k in range(n):
        if k and time.time() - t_start > deadline_s:
            break
        tag = "%d_%d" % (os.getpid(), k)
        bdir = os.path.join(build_root, "b%d" % k)
        os.makedirs(bdir, exist_ok=True)
        t0 = time.time()
        mod = cpp_extension.load_inline(
            name="kevald_bench_relu_%s" % tag, cpp_sources=CPP_SRC,
            cuda_sources=CUDA_SRC % {"tag": tag, "one": one_constant(k)},
            functions=["relu_fwd"], build_directory=bdir, verbose=False,
            extra_cuda_cflags=["-O3"])
        t1 = time.time()
        # correctness: KernelBench runs a few trials on fresh inputs
        ok = True
        for trial in range(5):
            xi = torch.randn(B * D, device="cuda")
            if not torch.allclose(mod.relu_fwd(xi), torch.relu(xi), atol=1e-4, rtol=1e-4):
                ok = False
        ok = ok and torch.allclose(mod.relu_fwd(x), want, atol=1e-4, rtol=1e-4)
        torch.cuda.synchronize()
        t2 = time.time()
        # timing: 3 warm-up, 100 trials, one event pair each
        for _ in range(3):
            mod.relu_fwd(x)
        times = []
        for _ in range(100):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            mod.relu_fwd(x)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        t3 = time.time()
        rows.append({"k": k, "compile_s": round(t1 - t0, 3), "correctness_s": round(t2 - t1, 3),
                     "timing_s": round(t3 - t2, 3), "total_s": round(t3 - t0, 3), "correct": ok,
                     "median_ms": round(statistics.median(times), 5)})
        per.append(t3 - t0)
        print("  load_inline #%d: compile %.1f s, correct %s, median %.4f ms, total %.1f s" % (
            k, t1 - t0, ok, statistics.median(times), t3 - t0), file=sys.stderr)
    return per, rows


# ---------------------------------------------------------------- cupy RawKernel (NVRTC in-process)

CUPY_SRC = r'''// cupy side, version %(tag)s
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
                float v = x[i] * %(one)s;
                y[i] = v > 0.0f ? v : 0.0f;
        }
}
'''


def run_cupy(n, cache_dir):
    """The lightest in-process harness: NVRTC through cupy, same checks and timing."""
    os.environ["CUPY_CACHE_DIR"] = cache_dir  # fresh: no on-disk kernel cache hits
    import cupy as cp
    x = cp.random.standard_normal(B * D, dtype=cp.float32)
    per = []
    rows = []
    grid = ((B * D + 255) // 256,)
    for k in range(n):
        t0 = time.time()
        kern = cp.RawKernel(CUPY_SRC % {"tag": "%d-%d" % (os.getpid(), k), "one": one_constant(k)}, "relu")
        kern.compile()
        t1 = time.time()
        ok = True
        for trial in range(6):
            xi = x if trial == 5 else cp.random.standard_normal(B * D, dtype=cp.float32)
            y = cp.empty_like(xi)
            kern(grid, (256,), (xi, y, cp.uint64(B * D)))
            if not bool(cp.allclose(y, cp.maximum(xi, 0), atol=1e-4, rtol=1e-4)):
                ok = False
        cp.cuda.Device().synchronize()
        t2 = time.time()
        y = cp.empty_like(x)
        for _ in range(3):
            kern(grid, (256,), (x, y, cp.uint64(B * D)))
        times = []
        for _ in range(100):
            a = cp.cuda.Event()
            b = cp.cuda.Event()
            a.record()
            kern(grid, (256,), (x, y, cp.uint64(B * D)))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b))
        t3 = time.time()
        rows.append({"k": k, "compile_s": round(t1 - t0, 4), "total_s": round(t3 - t0, 4), "correct": ok,
                     "median_ms": round(statistics.median(times), 5)})
        per.append(t3 - t0)
    return per, rows


# ---------------------------------------------------------------- kevald

def run_kevald_eval(kevald, n, workdir, task_file, extra, timing):
    per = []
    rows = []
    for k in range(n):
        src = os.path.join(workdir, "eval_%d.cu" % k)
        with open(src, "w") as fh:
            fh.write(KEVALD_SRC % {"tag": "eval-%d-%d" % (os.getpid(), k), "one": one_constant(k)})
        plan = os.path.join(workdir, "plan.json")
        with open(plan, "w") as fh:
            json.dump(KEVALD_PLAN, fh)
        cmd = [kevald, "eval", "--task", task_file, "--source", src, "--plan", plan, "--timing", timing] + extra
        t0 = time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        el = time.time() - t0
        try:
            r = json.loads(p.stdout)
        except ValueError:
            r = {}
        v = r.get("verdict")
        med = (((r.get("timing") or {}).get("shapes") or [{}])[0].get("candidate") or {}).get("median_ms")
        rows.append({"k": k, "total_s": round(el, 3), "verdict": v, "rc": p.returncode, "median_ms": med,
                     "stderr": p.stderr[-400:] if v is None else ""})
        per.append(el)
        print("  kevald eval #%d: %s in %.2f s (median %s ms)%s" % (k, v, el, med,
              "" if v else " stderr: " + p.stderr[-300:]), file=sys.stderr)
    return per, rows


def http(base, method, path, body=None, timeout=120):
    req = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                 method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, {"detail": e.read().decode(errors="replace")}


def run_kevald_http(base, n, task, timing):
    deadline = time.time() + 120
    while True:
        try:
            code, ready = http(base, "GET", "/readyz", timeout=5)
            if code == 200 and ready.get("gpus_available", 0) > 0:
                break
        except OSError:
            ready = None
        if time.time() > deadline:
            raise RuntimeError("server not ready with a GPU: %s" % ready)
        time.sleep(0.2)
    subs = [{"task_spec": task, "source": KEVALD_SRC % {"tag": "http-%d-%d-%d" % (os.getpid(), int(time.time()), k),
                                                         "one": one_constant(k)},
             "plan": KEVALD_PLAN, "timing": timing} for k in range(n)]
    t0 = time.time()
    code, body = http(base, "POST", "/v1/submissions", {"submissions": subs})
    if code != 202:
        raise RuntimeError("batch POST: %s %s" % (code, body))
    verdicts = {}
    meds = []
    for sid in body["ids"]:
        while True:
            code, s = http(base, "GET", "/v1/submissions/%d?wait=60" % sid, timeout=90)
            if code == 200 and s.get("state") == "done":
                break
        verdicts[s.get("verdict")] = verdicts.get(s.get("verdict"), 0) + 1
        m = ((((s.get("result") or {}).get("timing") or {}).get("shapes") or [{}])[0].get("candidate") or {}).get("median_ms")
        if m is not None:
            meds.append(m)
    wall = time.time() - t0
    return wall, verdicts, meds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kevald", help="kevald binary (for `kevald eval` and, without --server, a server)")
    ap.add_argument("--server", help="base URL of a running kevald server with a GPU (else one is started)")
    ap.add_argument("--n", type=int, default=10, help="distinct sources per method (default 10)")
    ap.add_argument("--tasks", default=os.path.join(ROOT, "tasks"), help="task library (for the relu task)")
    ap.add_argument("--timing", default="fast", help="kevald timing preset or JSON (default fast)")
    ap.add_argument("--deadline", type=float, default=300.0,
                    help="stop starting new load_inline builds after S seconds (default 300)")
    ap.add_argument("--skip-load-inline", action="store_true", help="only the kevald columns")
    ap.add_argument("--gpus", default="auto", help="--gpus for kevald eval / serve (default auto)")
    ap.add_argument("--json", dest="json_out", help="write the results here")
    a = ap.parse_args()
    if not 1 <= a.n <= 1000:
        ap.error("--n must be in 1..1000")
    if not a.kevald and not a.server and a.skip_load_inline:
        ap.error("nothing to do: give --kevald or --server, or drop --skip-load-inline")
    timing = a.timing
    if timing not in ("fast", "precise"):
        try:
            json.loads(timing)
        except ValueError as e:
            ap.error("--timing: %s" % e)
    work = tempfile.mkdtemp(prefix="kevald-loadinline-", dir="/tmp")
    rep = {"n": a.n, "kernel": "relu over %d floats (B=%d, D=%d)" % (B * D, B, D), "timing": timing}
    task = task_doc(a.tasks)
    task_file = os.path.join(work, "bench_relu_1m.json")
    with open(task_file, "w") as fh:
        json.dump(task, fh)
    server = None
    try:
        # load_inline
        if a.skip_load_inline:
            rep["load_inline"] = {"skipped": "--skip-load-inline"}
        else:
            missing = check_toolchain()
            if missing:
                rep["load_inline"] = {"skipped": "missing: " + ", ".join(missing)}
                print("load_inline: MISSING " + ", ".join(missing), file=sys.stderr)
            else:
                os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
                try:
                    per, rows = run_load_inline(a.n, a.deadline, os.path.join(work, "torch_ext"))
                    rep["load_inline"] = {"n": len(per), "s_per_eval": round(statistics.mean(per), 3),
                                          "median_s": round(statistics.median(per), 3), "rows": rows}
                except Exception as e:  # noqa: BLE001 (a toolchain mismatch, a build failure: say so)
                    rep["load_inline"] = {"skipped": "load_inline failed: %s" % str(e)[-1500:]}
                    print("load_inline FAILED: %s" % str(e)[-3000:], file=sys.stderr)
        # cupy RawKernel
        if not a.skip_load_inline:
            try:
                per, rows = run_cupy(a.n, os.path.join(work, "cupy_cache"))
                rep["cupy_rawkernel"] = {"n": len(per), "s_per_eval": round(statistics.mean(per), 4),
                                         "median_s": round(statistics.median(per), 4), "rows": rows}
            except Exception as e:  # noqa: BLE001
                rep["cupy_rawkernel"] = {"skipped": "cupy: %s" % str(e)[-500:]}
        # kevald eval
        timing_arg = timing if timing in ("fast", "precise") else timing
        if a.kevald:
            per, rows = run_kevald_eval(a.kevald, a.n, work, task_file, ["--gpus", a.gpus], timing_arg)
            rep["kevald_eval"] = {"n": len(per), "s_per_eval": round(statistics.mean(per), 3),
                                  "median_s": round(statistics.median(per), 3), "rows": rows}
        # kevald HTTP
        base = a.server
        if not base and a.kevald:
            pf = os.path.join(work, "port")
            log = open(os.path.join(work, "server.log"), "w")
            server = subprocess.Popen([a.kevald, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(work, "db"),
                                       "--port-file", pf, "--gpus", a.gpus, "--log-level", "warn",
                                       "--tasks", a.tasks, "--shutdown-grace-s", "2"],
                                      stdout=log, stderr=subprocess.STDOUT)
            for _ in range(600):
                if os.path.exists(pf) and open(pf).read().strip():
                    break
                if server.poll() is not None:
                    raise RuntimeError("kevald serve exited: %s" % open(os.path.join(work, "server.log")).read()[-2000:])
                time.sleep(0.1)
            base = "http://127.0.0.1:%s" % open(pf).read().strip()
        if base:
            tj = timing if timing in ("fast", "precise") else json.loads(timing)
            wall, verdicts, meds = run_kevald_http(base.rstrip("/"), a.n, task, tj)
            rep["kevald_http"] = {"n": a.n, "wall_s": round(wall, 3), "s_per_eval": round(wall / a.n, 3),
                                  "verdicts": verdicts,
                                  "median_ms_p50": statistics.median(meds) if meds else None}
    finally:
        if server and server.poll() is None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)

    li = rep.get("load_inline", {}).get("s_per_eval")
    print("\n| method (%s, %d distinct sources) | s per evaluation | vs load_inline |" % (rep["kernel"], a.n))
    print("|---|---|---|")
    if li:
        print("| torch load_inline + 5 correctness checks + 100 event-timed runs | %.3f | 1.0× |" % li)
    else:
        print("| torch load_inline | %s | - |" % rep.get("load_inline", {}).get("skipped", "-"))
    cr = rep.get("cupy_rawkernel")
    if cr and "s_per_eval" in cr:
        print("| cupy RawKernel (NVRTC in-process, same checks and 100 timed runs; no sandbox, no isolation) | %.4f | %s |" % (
            cr["s_per_eval"], ("%.1f× faster" % (li / cr["s_per_eval"])) if li else "-"))
    elif cr:
        print("| cupy RawKernel | %s | - |" % cr["skipped"])
    for key, label in (("kevald_eval", "`kevald eval` (fresh workers per call)"),
                       ("kevald_http", "kevald HTTP, one batch of N")):
        r = rep.get(key)
        if r:
            ratio = ("%.1f× faster" % (li / r["s_per_eval"])) if li and r["s_per_eval"] > 0 else "-"
            extra = (" (%s)" % ", ".join("%s %d" % kv for kv in r["verdicts"].items())) if "verdicts" in r else ""
            print("| %s%s | %.3f | %s |" % (label, extra, r["s_per_eval"], ratio))
            if li:
                rep[key]["speedup_vs_load_inline"] = round(li / r["s_per_eval"], 2) if r["s_per_eval"] > 0 else None
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump(rep, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
