#!/usr/bin/env python3
"""
surface.py - how long a CUDA fault takes to surface after a launch, and what
a fresh CUDA context costs.

For every fault kind (below) and a normal kernel of the same length, N
samples (--samples, default 30), each in a fresh process: a fault is sticky
and poisons its context, so every sample is this script re-run with --child.
The child

  1. creates a context and an allocation, compiles its module with NVRTC
     (cupy.RawModule(backend="nvrtc")) and warms it up with one harmless
     launch of the normal kernel, timing each step from the parent's spawn
     (CLOCK_MONOTONIC is one clock for every process of the machine): the
     restart cost of a GPU worker;
  2. launches the kernel of its kind on a non-blocking stream, records an
     event right after it, and polls cudaEventQuery the way kevald-gpu does
     (worker/gpu/gpu.c gpu_event_wait(): spin ~100 us, then sleep 10 us doubling
     to 1 ms), timing from just after the launch call returned to the query
     that answered with an error (or success, for the normal kernel);
  3. writes one JSON object to the file the parent named and _exits (no
     teardown through a poisoned context).

Kinds (every kernel first runs the same FMA loop, --work-iters per thread
over --blocks x 256 threads, then thread 0 of block 0 does the fault):
  illegal_address  a float store through a wild pointer (0x10, a kernel argument)
  misaligned       a float store to buffer + 1 byte (inside the allocation)
  trap             asm volatile("trap;")
  assert           a failing device assert: <assert.h> if NVRTC finds it, else
                   __assertfail() (what assert() expands to) declared here
  normal           no fault (the baseline: how long polling sees a normal end)

The parent prints a markdown table (kind | samples | error name | p50 | p90 |
p99 | max, in ms from launch to the failing query), a table of restart costs,
and writes every raw sample to --out (JSON). A child that does not answer
within --timeout seconds is killed and counted as hung.

Exit status: 0; 1 when a child failed in an unexpected way for every sample
of some kind; 2 usage; 77 when cupy or a GPU is missing (so a test harness
skips). Needs Python 3.8+ and cupy (14 was the target) in the children.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

T_IMPORTED = time.monotonic_ns()  # the child's own start, before cupy

KINDS = ("illegal_address", "misaligned", "trap", "assert", "normal")
THREADS = 256
NOT_READY = 600  # cudaErrorNotReady

# cudaError_t -> the driver's CUresult name (same numbers for these launch errors).
DRIVER_NAMES = {
    0: "CUDA_SUCCESS", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT", 710: "CUDA_ERROR_ASSERT", 714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE", 718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED",
    999: "CUDA_ERROR_UNKNOWN",
}

COMMON = r'''
__device__ __forceinline__ float work(float *buf, int n, int iters)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float x = i < n ? buf[i] : 0.0f;
        for (int k = 0; k < iters; k++)
                x = fmaf(x, 1.0000001f, 1e-7f);
        if (i < n)
                buf[i] = x;
        return x;
}

extern "C" __global__ void k_normal(float *buf, int n, int iters, unsigned long long arg)
{
        work(buf, n, iters);
}
'''

FAULTS = {
    "illegal_address": [r'''
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0)
                *(volatile float *)arg = x;     /* arg = 0x10 */
}
'''],
    "misaligned": [r'''
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0)
                *(volatile float *)((char *)buf + arg) = x;     /* arg = 1 */
}
'''],
    "trap": [r'''
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0 && arg) {
                buf[0] = x;
                asm volatile("trap;" ::: "memory");
        }
}
'''],
    # Tried in order; the first that compiles is used (its index is reported as "variant").
    "assert": [
        r'''
#include <assert.h>
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0) {
                buf[0] = x;
                assert(arg == 0);       /* arg = 1 */
        }
}
''',
        r'''
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0) {
                buf[0] = x;
                if (arg != 0)
                        __assertfail("arg == 0", __FILE__, __LINE__, __func__, sizeof(char));
        }
}
''',
        r'''
extern "C" __host__ __device__ void __assertfail(const char *, const char *, unsigned int, const char *,
                                                 unsigned long long);
extern "C" __global__ void k_fault(float *buf, int n, int iters, unsigned long long arg)
{
        float x = work(buf, n, iters);
        if (blockIdx.x == 0 && threadIdx.x == 0) {
                buf[0] = x;
                if (arg != 0)
                        __assertfail("arg == 0", __FILE__, __LINE__, __func__, sizeof(char));
        }
}
''',
    ],
}
FAULT_ARG = {"illegal_address": 0x10, "misaligned": 1, "trap": 1, "assert": 1, "normal": 0}


def ms_since(t0_ns, t1_ns=None):
    return ((time.monotonic_ns() if t1_ns is None else t1_ns) - t0_ns) / 1e6


# ---- child ------------------------------------------------------------------

def error_name(status, runtime_name=None):
    """The driver's CUDA_ERROR_* name of a cudaError_t status."""
    if status in DRIVER_NAMES:
        return DRIVER_NAMES[status]
    if runtime_name and runtime_name.startswith("cudaError"):
        out = "CUDA_ERROR"
        for ch in runtime_name[len("cudaError"):]:
            out += ("_" + ch) if ch.isupper() else ch.upper()
        return out
    return f"CUDA_STATUS_{status}"


def exc_error(e):
    """(CUDA_ERROR_* name, status, message) of a cupy CUDA exception."""
    status = getattr(e, "status", None)
    msg = str(e)
    head = msg.split(":", 1)[0].strip()
    if head.startswith("CUDA_ERROR_"):  # a driver error (e.g. from cuLaunchKernel)
        return head, status, msg
    return error_name(status, head), status, msg


def runtime_status_text(cupy, status):
    try:
        return str(cupy.cuda.runtime.CUDARuntimeError(status))
    except Exception:  # noqa: BLE001 - only a label
        return f"status {status}"


def compile_module(cupy, kind, options):
    """(RawModule, fault function or None, variant index); the normal kernel is always there."""
    if kind == "normal":
        mod = cupy.RawModule(code=COMMON, backend="nvrtc", options=options)
        return mod, None, 0
    last = None
    for i, src in enumerate(FAULTS[kind]):
        try:
            mod = cupy.RawModule(code=COMMON + src, backend="nvrtc", options=options)
            fault = mod.get_function("k_fault")  # compiles and loads here (lazily)
            return mod, fault, i
        except cupy.cuda.compiler.CompileException as e:
            last = e
    raise RuntimeError(f"no variant of {kind} compiles; last error: {last}")


def poll(query, t0_ns, deadline_ns):
    """Poll @query() (a raw cudaError_t) like kevald-gpu: spin ~100 us, then sleep 10 us doubling to 1 ms.
    Returns (status, t_ns, queries, slept); status None when @deadline_ns passed first."""
    nap = 10e-6
    queries = 0
    slept = 0
    while True:
        st = query()
        t = time.monotonic_ns()
        queries += 1
        if st != NOT_READY:
            return st, t, queries, slept
        if t >= deadline_ns:
            return None, t, queries, slept
        if t - t0_ns < 100_000:
            continue
        time.sleep(nap)
        slept += 1
        if nap < 1e-3:
            nap = min(nap * 2, 1e-3)


def child(a):
    t_spawn = a.t_spawn or T_IMPORTED
    out = {"kind": a.child, "pid": os.getpid(), "ms": None, "error": None, "status": None, "hung": False}
    steps = {"python_ms": ms_since(t_spawn, T_IMPORTED)}
    t = time.monotonic_ns()
    try:
        import cupy
    except Exception as e:  # noqa: BLE001
        out.update(fatal=f"import cupy: {e}", exit=77)
        return out
    steps["import_cupy_ms"] = ms_since(t)
    if a.child == "probe":
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001
            out.update(fatal=f"no CUDA device: {e}", exit=77)
            return out
        if n < 1:
            out.update(fatal="no CUDA device", exit=77)
            return out
        props = cupy.cuda.runtime.getDeviceProperties(a.device)
        name = props.get("name", b"")
        out.update(gpu=name.decode() if isinstance(name, bytes) else str(name), cc=f"{props.get('major')}.{props.get('minor')}",
                   devices=n, cupy=cupy.__version__, driver=cupy.cuda.runtime.driverGetVersion(),
                   runtime=cupy.cuda.runtime.runtimeGetVersion(), exit=0)
        return out

    t = time.monotonic_ns()
    cupy.cuda.Device(a.device).use()
    cupy.cuda.runtime.free(0)  # cudaFree(0): creates the primary context
    steps["context_ms"] = ms_since(t)
    n = a.blocks * THREADS
    t = time.monotonic_ns()
    buf = cupy.zeros(n, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    ev = cupy.cuda.Event(block=False, disable_timing=True)
    cupy.cuda.runtime.deviceSynchronize()
    steps["alloc_ms"] = ms_since(t)
    t = time.monotonic_ns()
    mod, fault, variant = compile_module(cupy, a.child, ("-std=c++17",))
    normal = mod.get_function("k_normal")
    steps["compile_load_ms"] = ms_since(t)
    args = (buf, cupy.int32(n), cupy.int32(a.work_iters), cupy.uint64(0))
    t = time.monotonic_ns()
    normal((a.blocks,), (THREADS,), args, stream=stream)
    stream.synchronize()
    steps["first_launch_ms"] = ms_since(t)
    steps["ready_ms"] = ms_since(t_spawn)  # spawn to a warm context: the restart cost
    out.update(steps, variant=variant)

    kern = fault if fault is not None else normal
    kargs = (buf, cupy.int32(n), cupy.int32(a.work_iters), cupy.uint64(FAULT_ARG[a.child]))
    if a.poll == "event":
        def query():
            return cupy.cuda.runtime.eventQuery(ev.ptr)
    else:
        def query():
            return cupy.cuda.runtime.streamQuery(stream.ptr)
    tl = time.monotonic_ns()
    try:
        kern((a.blocks,), (THREADS,), kargs, stream=stream)
    except Exception as e:  # noqa: BLE001 - a launch that fails at once surfaced at the call
        t0 = time.monotonic_ns()
        name, status, msg = exc_error(e)
        out.update(ms=0.0, launch_call_ms=ms_since(tl, t0), error=name, status=status, message=msg,
                   surfaced="launch")
        return out
    t0 = time.monotonic_ns()
    out["launch_call_ms"] = ms_since(tl, t0)
    if a.poll == "event":
        try:
            ev.record(stream)
        except Exception as e:  # noqa: BLE001 - cudaEventRecord may report an earlier launch's error
            name, status, msg = exc_error(e)
            out.update(ms=ms_since(t0), error=name, status=status, message=msg, surfaced="record")
            return out
    deadline = t0 + int(a.hang_after * 1e9)
    status, t1, queries, slept = poll(query, t0, deadline)
    out.update(queries=queries, sleeps=slept, surfaced="query")
    if status is None:
        out.update(hung=True, ms=ms_since(t0, t1))
        return out
    out["ms"] = ms_since(t0, t1)
    out["status"] = status
    if status != 0:
        text = runtime_status_text(cupy, status)
        out.update(error=error_name(status, text.split(":", 1)[0].strip()), message=text)
    return out


def child_main(a):
    try:
        out = child(a)
    except Exception as e:  # noqa: BLE001 - report, do not hang in teardown
        out = {"kind": a.child, "fatal": f"{type(e).__name__}: {e}", "exit": 1}
    out["t_report_ns"] = time.monotonic_ns()
    data = json.dumps(out) + "\n"
    if a.result_file:
        with open(a.result_file, "w") as f:
            f.write(data)
    else:
        sys.stdout.write(data)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(out.get("exit", 0)))  # no cupy teardown through a poisoned context


# ---- parent -----------------------------------------------------------------

def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not xs:
        return None
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def fmt(v):
    return "-" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def run_child(a, kind, tmpdir, env):
    res_path = os.path.join(tmpdir, f"res-{kind}-{time.monotonic_ns()}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--result-file", res_path,
           "--device", str(a.device), "--blocks", str(a.blocks), "--work-iters", str(a.work_iters),
           "--poll", a.poll, "--hang-after", str(a.hang_after)]
    t_spawn = time.monotonic_ns()
    cmd += ["--t-spawn", str(t_spawn)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    killed = False
    try:
        so, se = p.communicate(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        killed = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        so, se = p.communicate()
    t_exit = time.monotonic_ns()
    rec = None
    try:
        with open(res_path) as f:
            rec = json.loads(f.read())
        os.unlink(res_path)
    except (OSError, ValueError):
        pass
    if rec is None:
        rec = {"kind": kind, "fatal": "no result from the child", "hung": killed}
    rec["killed"] = killed
    rec["rc"] = p.returncode
    rec["wall_ms"] = ms_since(t_spawn, t_exit)
    if "t_report_ns" in rec:
        rec["exit_ms"] = ms_since(rec.pop("t_report_ns"), t_exit)  # report to exit seen: teardown
    if rec.get("fatal") or killed:
        rec["stderr_tail"] = se.decode(errors="replace")[-2000:]
        rec["stdout_tail"] = so.decode(errors="replace")[-2000:]
    return rec


def label(r):
    if r.get("killed"):
        return "killed (hung)"
    if r.get("hung"):
        return "hung"
    if r.get("fatal"):
        return "failed"
    return r.get("error") or "none"


def summarize(kinds, samples):
    summary = {}
    for k in kinds:
        rs = [r for r in samples if r.get("kind") == k]
        names = {}
        for r in rs:
            names[label(r)] = names.get(label(r), 0) + 1
        ms = [r["ms"] for r in rs if r.get("ms") is not None and not r.get("hung") and not r.get("fatal")]
        s = {"samples": len(rs), "errors": names, "ms": {}, "restart_ms": {}}
        for q in (50, 90, 99):
            s["ms"][f"p{q}"] = percentile(ms, q)
        s["ms"]["max"] = max(ms) if ms else None
        for key in ("ready_ms", "context_ms", "compile_load_ms", "first_launch_ms", "python_ms",
                    "import_cupy_ms", "exit_ms"):
            xs = [r[key] for r in rs if isinstance(r.get(key), (int, float))]
            s["restart_ms"][key] = {"p50": percentile(xs, 50), "p99": percentile(xs, 99),
                                    "max": max(xs) if xs else None}
        summary[k] = s
    return summary


def print_tables(kinds, summary, meta):
    print(f"\nFault surfacing on {meta.get('gpu', '?')} (driver {meta.get('driver')}, cupy {meta.get('cupy')}), "
          f"{meta['blocks']}x{THREADS} threads, {meta['work_iters']} FMA iterations, poll {meta['poll']}; "
          "ms from just after the launch call to the query that answered:\n")
    print("| kind | samples | error name | p50 ms | p90 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for k in kinds:
        s = summary[k]
        names = ", ".join(f"{n} ({c})" if len(s["errors"]) > 1 else n
                          for n, c in sorted(s["errors"].items(), key=lambda kv: -kv[1]))
        m = s["ms"]
        print(f"| {k} | {s['samples']} | {names} | {fmt(m['p50'])} | {fmt(m['p90'])} | {fmt(m['p99'])} "
              f"| {fmt(m['max'])} |")
    print("\nRestart cost (a fresh process to a warm context; ms, p50 / p99):\n")
    print("| kind | spawn to ready | python start | import cupy | context | compile+load | first launch "
          "| exit after report |")
    print("|---|---|---|---|---|---|---|---|")
    for k in kinds:
        r = summary[k]["restart_ms"]
        cells = [f"{fmt(r[key]['p50'])} / {fmt(r[key]['p99'])}"
                 for key in ("ready_ms", "python_ms", "import_cupy_ms", "context_ms", "compile_load_ms",
                             "first_launch_ms", "exit_ms")]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\n(compile+load includes NVRTC on the first sample of a kind only; later ones hit cupy's kernel "
          "cache. exit after report: from the child's report to its exit seen by the parent.)")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="How long CUDA faults take to surface after a launch (each sample in a fresh process), "
                    "and what a fresh context costs. Prints a markdown table; --out writes the raw samples.")
    ap.add_argument("--samples", type=int, default=30, help="samples per kind (default 30)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated kinds (default all: {','.join(KINDS)})")
    ap.add_argument("--out", metavar="FILE", help="write every raw sample and the summary here (JSON)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per child before it is killed as hung (default 60)")
    ap.add_argument("--hang-after", type=float, default=None,
                    help="seconds the child polls before it reports hung itself (default: 80%% of --timeout)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    ap.add_argument("--blocks", type=int, default=1024, help="blocks of 256 threads per launch (default 1024)")
    ap.add_argument("--work-iters", type=int, default=4096,
                    help="FMA iterations per thread before the fault (default 4096; 0: fault at once)")
    ap.add_argument("--poll", choices=("event", "stream"), default="event",
                    help="cudaEventQuery on an event recorded after the launch (like kevald-gpu; default) or "
                         "cudaStreamQuery")
    ap.add_argument("--max-connections", type=int, default=1,
                    help="CUDA_DEVICE_MAX_CONNECTIONS of every child: 1 as kevald-gpu sets it (default), "
                         "0 for the driver's own default (8); a value in the environment wins")
    ap.add_argument("--child", choices=KINDS + ("probe",), help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    ap.add_argument("--t-spawn", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.hang_after is None:
        a.hang_after = max(0.1, a.timeout * 0.8)
    if a.child is None:
        kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
        bad = [k for k in kinds if k not in KINDS]
        if bad or not kinds:
            ap.error(f"unknown kind(s) {', '.join(bad) or '(none)'}; choose from {', '.join(KINDS)}")
        if a.samples < 1 or a.timeout <= 0 or a.blocks < 1 or a.work_iters < 0:
            ap.error("--samples and --blocks must be >= 1, --timeout > 0, --work-iters >= 0")
        a.kind_list = kinds
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.child:
        child_main(a)  # never returns
    env = dict(os.environ)
    if a.max_connections > 0:
        env.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", str(a.max_connections))
    with tempfile.TemporaryDirectory(prefix="kevald-faults-") as tmp:
        env.setdefault("CUPY_CACHE_DIR", os.path.join(tmp, "cupy-cache"))
        probe = run_child(a, "probe", tmp, env)
        if probe.get("exit") == 77 or (probe.get("fatal") and probe.get("rc") == 77):
            print(f"surface.py: skipped: {probe.get('fatal', 'cupy or a GPU is missing')}", file=sys.stderr)
            return 77
        if probe.get("fatal") or probe.get("killed"):
            print(f"surface.py: the probe child failed: {probe.get('fatal')}\n{probe.get('stderr_tail', '')}",
                  file=sys.stderr)
            return 77 if "cupy" in str(probe.get("fatal")) else 1
        meta = {k: probe.get(k) for k in ("gpu", "cc", "devices", "cupy", "driver", "runtime")}
        meta.update(max_connections=env.get("CUDA_DEVICE_MAX_CONNECTIONS", "driver default"))
        meta.update(device=a.device, blocks=a.blocks, threads=THREADS, work_iters=a.work_iters, poll=a.poll,
                    samples=a.samples, timeout_s=a.timeout, hang_after_s=a.hang_after, kinds=a.kind_list,
                    started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), host=os.uname().nodename)
        print(f"surface.py: {meta['gpu']} (cc {meta['cc']}), {a.samples} samples x {len(a.kind_list)} kinds, "
              "one process each", file=sys.stderr)
        samples = []
        # Interleaved (round robin over the kinds), so drift over the run hits every kind alike.
        for i in range(a.samples):
            for k in a.kind_list:
                r = run_child(a, k, tmp, env)
                r["sample"] = i
                samples.append(r)
                if r.get("fatal") or r.get("killed"):
                    print(f"surface.py: {k} sample {i}: {label(r)}: {r.get('fatal', '')}", file=sys.stderr)
            print(f"surface.py: {i + 1}/{a.samples} rounds done", file=sys.stderr)
    summary = summarize(a.kind_list, samples)
    print_tables(a.kind_list, summary, meta)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"meta": meta, "summary": summary, "samples": samples}, f, indent=1)
        print(f"\nraw samples: {a.out}")
    failed = [k for k in a.kind_list if summary[k]["errors"].get("failed", 0) == summary[k]["samples"]]
    if failed:
        print(f"surface.py: every sample failed for {', '.join(failed)} (see --out for stderr)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
