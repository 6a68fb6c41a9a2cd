#!/usr/bin/env python3
"""
ctxstart.py - how long CUDA context creation takes when several processes
of one host create contexts at the same time, and what the driver's
per-process settings change about it.

The question behind issue 13: a GPU worker's `cuda_init` (cuInit and the
primary context) took ~0.3 s on an idle H100 but 0.65-1.3 s p50 while a
busy server restarted workers on two GPUs, and doubled again with five
workers per GPU instead of three (BENCHMARKS.md). Is context creation
serialized across processes, and by what?

Each round starts K child processes that wait for one common instant and
then, each on its own, time cuInit, cuDevicePrimaryCtxRetain +
cuCtxSetCurrent, cuStreamCreate, and (with --alloc-mib) one cuMemAlloc of
that size and a memset of it; then they exit. The parent records when each
child has gone (its teardown: from the child's last timestamp to waitpid).
Per variant (environment and allocation) and K it prints the median and
the largest of each phase over --rounds rounds. If creation were
independent per process, the K = 8 row would look like K = 1.

Usage: python3 bench/faults/ctxstart.py [--counts 1,2,4,8] [--rounds 5]
         [--gpu 0] [--alloc-mib 1024] [--out F.json]
Runs against whatever libcuda.so.1 the loader finds (the fake driver of
tests/gpu/fake too). Exit 0; 77 when libcuda cannot be loaded.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

# label, extra environment, MiB allocated by each child
VARIANTS = [
    ("plain", {}, 0),
    ("max_connections_1", {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, 0),
    ("alloc", {}, None),  # --alloc-mib
]


def child(at, alloc_mib):
    cu = ctypes.CDLL("libcuda.so.1")

    def call(name, *args):
        fn = getattr(cu, name + "_v2", None) or getattr(cu, name)
        r = fn(*args)
        if r != 0:
            print(json.dumps({"error": "%s: CUresult %d" % (name, r)}), flush=True)
            sys.exit(1)

    ctx, dev, stream, ptr = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    while time.monotonic() < at:
        time.sleep(0.0005)
    t = [time.monotonic()]
    call("cuInit", ctypes.c_uint(0))
    t.append(time.monotonic())
    call("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(0))
    call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    call("cuCtxSetCurrent", ctx)
    t.append(time.monotonic())
    call("cuStreamCreate", ctypes.byref(stream), ctypes.c_uint(1))
    t.append(time.monotonic())
    if alloc_mib:
        call("cuMemAlloc", ctypes.byref(ptr), ctypes.c_size_t(alloc_mib << 20))
        call("cuMemsetD8Async", ptr, ctypes.c_ubyte(0), ctypes.c_size_t(alloc_mib << 20), stream)
        if hasattr(cu, "cuStreamSynchronize"):
            call("cuStreamSynchronize", stream)
    t.append(time.monotonic())
    ms = [(b - a) * 1e3 for a, b in zip(t, t[1:])]
    print(json.dumps({"init": ms[0], "ctx": ms[1], "stream": ms[2], "alloc": ms[3], "late": (t[0] - at) * 1e3,
                      "end": time.monotonic()}), flush=True)


def one_round(k, env, alloc_mib, gpu):
    at = time.monotonic() + 0.5
    e = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), **env)
    procs = [subprocess.Popen([sys.executable, __file__, "--child", repr(at), str(alloc_mib)], env=e,
                              stdout=subprocess.PIPE, text=True) for _ in range(k)]
    gone = {}
    while len(gone) < k:  # exits in the order they happen, each timed as it is reaped
        pid, _ = os.waitpid(-1, 0)
        gone[pid] = time.monotonic()
    out = []
    for p in procs:
        line = p.stdout.read()
        p.wait()
        r = json.loads(line) if line.strip() else {"error": "no output, status %r" % p.returncode}
        if "error" in r:
            raise RuntimeError(r["error"])
        r["teardown"] = (gone[p.pid] - r.pop("end")) * 1e3
        out.append(r)
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(float(sys.argv[2]), int(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="1,2,4,8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--alloc-mib", type=int, default=1024, help="what each child of the `alloc` variant allocates")
    ap.add_argument("--out")
    args = ap.parse_args()
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        print("ctxstart: no libcuda.so.1 (%s); skipped" % e)
        return 77
    phases = ["init", "ctx", "stream", "alloc", "teardown"]
    rows = []
    print("| variant | processes at once | " + " | ".join("%s ms p50 / max" % p for p in phases) + " | start ms p50 / max |")
    print("|---|---|" + "---|" * (len(phases) + 1))
    for label, env, alloc_mib in VARIANTS:
        alloc_mib = args.alloc_mib if alloc_mib is None else alloc_mib
        for k in [int(x) for x in args.counts.split(",")]:
            samples = []
            for _ in range(args.rounds):
                samples += one_round(k, env, alloc_mib, args.gpu)
            for s in samples:
                s["start"] = s["init"] + s["ctx"] + s["stream"]
            cols = phases + ["start"]
            stat = {c: (statistics.median(s[c] for s in samples), max(s[c] for s in samples)) for c in cols}
            rows.append({"variant": label, "env": env, "alloc_mib": alloc_mib, "processes": k,
                         "samples": len(samples), "ms": stat})
            print("| %s | %d | %s |" % (label, k, " | ".join("%.0f / %.0f" % stat[c] for c in cols)), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
