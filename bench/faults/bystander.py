#!/usr/bin/env python3
"""
bystander.py - what a fault or a hang in one process costs another process
on the same GPU.

The question behind issue 13's design: can a second worker process keep the
GPU busy while the driver surfaces a fault in the first (150-350 ms, see
surface.py), and does a faulting or hung context disturb event timing in a
bystander context?

One bystander process (--child bystander) creates its context and then, for
--seconds, launches a short FMA kernel (~--work-us) on its own stream in a
loop, recording CLOCK_MONOTONIC before each launch and the event-timed
duration of each kernel. Meanwhile the parent starts one faulter process per
sample (--child faulter KIND), each creating its own context (timed: context
creation while the GPU is in use), launching a kernel of KIND and polling
until it fails (or, for `hang`, killing it after --hang-ms).

The parent then reports, per sample, the bystander's launch rate and its
longest event-timed kernel in three windows of the other process: while it
created its context, while its fault surfaced (for `hang`: until the kill),
and while it exited; and the rate with no other process. So one sees
whether the bystander stalls (rate drops) and whether its timings are
inflated. With --worker PATH, also --samples start-ups and exits of a real
kevald-gpu (start-up: spawn to HELLO; exit: end of input to gone). With
--gpu A --other-gpu B the bystander runs on GPU A and the other processes
on GPU B of the same host (CUDA_VISIBLE_DEVICES), to see whether a fault or
a context on one GPU disturbs another.

Exit 0, 77 without cupy or a GPU. Needs cupy.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SRC = r'''
extern "C" __global__ void fma_loop(float *out, int iters)
{
        float a = threadIdx.x * 1e-3f, b = 1.0001f;
        for (int i = 0; i < iters; i++)
                a = a * b + 1e-7f;
        out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
extern "C" __global__ void fault(float *out, float *wild, int kind, int iters)
{
        float a = threadIdx.x * 1e-3f, b = 1.0001f;
        for (int i = 0; i < iters; i++)
                a = a * b + 1e-7f;
        out[blockIdx.x * blockDim.x + threadIdx.x] = a;
        if (blockIdx.x == 0 && threadIdx.x == 0) {
                if (kind == 0)
                        *wild = a;                                  /* illegal address */
                else if (kind == 1)
                        asm volatile("trap;");
                else if (kind == 2)
                        *(float *)((char *)out + 1) = a;            /* misaligned */
                else if (kind == 3)
                        for (;;)
                                asm volatile("nanosleep.u32 1000;"); /* hang */
        }
}
'''
KINDS = {"illegal_address": 0, "trap": 1, "misaligned": 2, "hang": 3}


def mono():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def child_bystander(a):
    import cupy as cp
    mod = cp.RawModule(code=SRC, backend="nvrtc")
    k = mod.get_function("fma_loop")
    out = cp.zeros(132 * 256, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    iters = a.iters
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    with s:
        k((132,), (256,), (out, cp.int32(iters)))
        s.synchronize()
        end = mono() + a.seconds
        beat = mono() + 1
        while mono() < end:
            if mono() > beat:
                print("bystander: %d launches, last %.1f us" % (len(rows), rows[-1][1] * 1e3 if rows else 0),
                      flush=True)
                beat += 1
            t = mono()
            e0.record(s)
            k((132,), (256,), (out, cp.int32(iters)))
            e1.record(s)
            e1.synchronize()
            rows.append((t, cp.cuda.get_elapsed_time(e0, e1), mono()))
    json.dump(rows, open(a.out, "w"))
    os._exit(0)


def child_faulter(a):
    t0 = mono()
    import cupy as cp
    t_ctx0 = mono()
    cp.zeros(1, dtype=cp.float32)          # context
    t_ctx = mono()
    mod = cp.RawModule(code=SRC, backend="nvrtc")
    k = mod.get_function("fault")
    out = cp.zeros(132 * 256 + 8, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    ev = cp.cuda.Event(disable_timing=True)
    info = {"spawn_to_ctx_ms": (t_ctx - t0) * 1e3, "t_ctx0": t_ctx0, "t_ctx1": t_ctx}
    with s:
        t_launch = mono()
        k((132,), (256,), (out, cp.uint64(16), cp.int32(KINDS[a.kind]), cp.int32(a.iters)))
        ev.record(s)
    info["t_launch"] = t_launch
    if a.kind == "hang":
        json.dump(info, open(a.out + ".tmp", "w"))
        os.rename(a.out + ".tmp", a.out)
        while True:
            time.sleep(1)
    err = None
    while True:
        st = cp.cuda.runtime.eventQuery(ev.ptr)     # 0 done, 600 not ready, else the error
        if st == 0:
            break
        if st != 600:
            err = "cuda status %d" % st
            break
        time.sleep(0.00002)
    info["t_end"] = mono()
    info["error"] = err
    json.dump(info, open(a.out, "w"))
    os._exit(0)


def gpu_env(index):
    """The environment of a child pinned to GPU @index (None: as this process)."""
    return dict(os.environ, CUDA_VISIBLE_DEVICES=str(index)) if index is not None else dict(os.environ)


def read_at_least(stream, n, timeout_s=60):
    """Bytes from a child's @stream until there are @n, it closes, or @timeout_s pass."""
    import select
    buf = b""
    deadline = mono() + timeout_s
    while len(buf) < n and mono() < deadline:
        r, _, _ = select.select([stream], [], [], 1)
        if r:
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                break
            buf += chunk
    return buf


def worker_cycle(path, t_spawn, faults, gpu=None):
    """Start kevald-gpu, wait for its HELLO, close its input (it exits): the context window is
    [spawn, HELLO], the exit window [end of input, gone]."""
    import struct
    p = subprocess.Popen([path, "--no-sandbox"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=dict(gpu_env(gpu), KEVALD_GPU_INDEX="0"))
    buf = read_at_least(p.stdout, 16)
    t_hello = mono()
    ok = len(buf) >= 16 and struct.unpack("<4I", buf[:16])[1] == 1
    p.stdin.close()
    t_eof = mono()
    p.wait(timeout=30)
    t_gone = mono()
    faults.append({"kind": "worker", "error": "HELLO" if ok else "no HELLO", "t_ctx0": t_spawn, "t_ctx1": t_hello,
                   "t_start": t_hello, "t_end": t_eof, "t_gone": t_gone,
                   "start_ms": (t_hello - t_spawn) * 1e3, "exit_ms": (t_gone - t_eof) * 1e3})
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--kind")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--hang-ms", type=float, default=300)
    ap.add_argument("--worker", help="also start and stop this kevald-gpu --samples times (its start-up and "
                    "exit as the bystander sees them)")
    ap.add_argument("--gpu", type=int, help="the bystander's GPU (default: as this process)")
    ap.add_argument("--other-gpu", type=int, help="the GPU of the faulting processes and the worker (default: as "
                    "this process)")
    a = ap.parse_args()
    if a.child:
        if a.child[0] == "bystander":
            return child_bystander(a)
        a.kind = a.child[1]
        return child_faulter(a)
    try:
        import cupy  # noqa: F401
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        print("bystander: no cupy/GPU: %s" % e, file=sys.stderr)
        return 77
    tmp = tempfile.mkdtemp()
    me = os.path.abspath(__file__)
    bys_out = os.path.join(tmp, "bys.json")
    kinds = ["illegal_address", "trap", "misaligned", "hang"] + (["worker"] if a.worker else [])
    seconds = 3 + len(kinds) * a.samples * 2.5 + 2
    by = subprocess.Popen([sys.executable, me, "--child", "bystander", "--out", bys_out,
                           "--seconds", str(seconds), "--iters", str(a.iters)], env=gpu_env(a.gpu))
    time.sleep(3)
    faults = []
    for kind in kinds:
        for i in range(a.samples):
            out = os.path.join(tmp, "f_%s_%d.json" % (kind, i))
            t_spawn = mono()
            if kind == "worker":
                p = worker_cycle(a.worker, t_spawn, faults, a.other_gpu)
                print("worker %d: %s" % (i, {k: v for k, v in faults[-1].items() if not k.startswith("t_")}),
                      flush=True)
                time.sleep(0.8)
                continue
            p = subprocess.Popen([sys.executable, me, "--child", "faulter", kind, "--out", out,
                                  "--iters", str(a.iters)], env=gpu_env(a.other_gpu))
            if kind == "hang":
                # wait for the launch, then kill after hang_ms
                deadline = mono() + 30
                while not os.path.exists(out) and mono() < deadline and p.poll() is None:
                    time.sleep(0.002)
                try:
                    info = json.load(open(out))
                except (OSError, ValueError):
                    print("hang: faulter never launched", flush=True)
                    p.kill()
                    continue
                time.sleep(a.hang_ms / 1e3)
                t_kill = mono()
                p.kill()
                p.wait()
                t_gone = mono()
                faults.append({"kind": kind, "t_start": info["t_launch"], "t_end": t_kill, "t_gone": t_gone,
                               "kill_to_gone_ms": (t_gone - t_kill) * 1e3, "spawn": t_spawn,
                               "spawn_to_ctx_ms": info["spawn_to_ctx_ms"], "t_ctx0": info["t_ctx0"],
                               "t_ctx1": info["t_ctx1"], "exit_ms": (t_gone - t_kill) * 1e3,
                               "surface_ms": (t_kill - info["t_launch"]) * 1e3})
            else:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    print("%s: faulter did not end in 20 s, killed" % kind, flush=True)
                    p.kill()
                    p.wait()
                t_gone = mono()
                try:
                    info = json.load(open(out))
                except (OSError, ValueError):
                    info = {"error": "no output"}
                info.update(kind=kind, t_start=info.get("t_launch", t_spawn), t_gone=t_gone, spawn=t_spawn)
                info["surface_ms"] = (info.get("t_end", t_gone) - info["t_start"]) * 1e3
                info["exit_ms"] = (t_gone - info.get("t_end", t_gone)) * 1e3
                faults.append(info)
            print("%s %d: %s" % (kind, i, {k: v for k, v in faults[-1].items() if not k.startswith("t_")}), flush=True)
            time.sleep(0.8)
    try:
        by.wait(timeout=seconds + 20)
    except subprocess.TimeoutExpired:
        print("bystander did not end, killed", flush=True)
        by.kill()
        return 1
    rows = json.load(open(bys_out))
    quiet = [r for r in rows if not any(f.get("t_ctx0", f["t_start"]) - 0.05 <= r[0] <= f.get("t_gone", f.get("t_end", 0)) + 0.05 for f in faults)]

    def summarize(rs, span_s):
        d = [r[1] for r in rs]
        if not d:
            return "no launches"
        return "%d launches in %.0f ms (%.1f/ms), kernel p50 %.1f us, p99 %.1f us, max %.0f us" % (
            len(d), span_s * 1e3, len(d) / (span_s * 1e3) if span_s else 0, statistics.median(d) * 1e3,
            sorted(d)[int(0.99 * (len(d) - 1))] * 1e3, max(d) * 1e3)
    span_quiet = sum(r[2] - r[0] for r in quiet)
    print("bystander quiet:", summarize(quiet, span_quiet))
    # per sample: the bystander's launch rate while the other process created its context,
    # while its fault surfaced (for a hang: until the kill), and while it exited
    for f in faults:
        cells = []
        for name, lo, hi in (("context", f.get("t_ctx0"), f.get("t_ctx1")), ("surfacing", f["t_start"], f["t_end"]),
                             ("exit", f["t_end"], f.get("t_gone"))):
            if lo is None or hi is None or hi <= lo:
                cells.append("%s -" % name)
                continue
            inside = [r for r in rows if lo <= r[0] <= hi]
            cells.append("%s %.0f ms: %.1f/ms%s" % (name, (hi - lo) * 1e3, len(inside) / ((hi - lo) * 1e3),
                                                   (", kernel max %.0f us" % (max(r[1] for r in inside) * 1e3))
                                                   if inside else ""))
        print("%-16s %s | %s" % (f["kind"], (f.get("error") or "")[:20], " | ".join(cells)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
