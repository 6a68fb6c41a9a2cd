#!/usr/bin/env python3
"""
churn.py - start and stop processes on a GPU at a steady rate, as a faulting
RL batch makes kevald restart its GPU workers, so that a benchmark running
beside it shows what the restarts alone cost the jobs that run meanwhile.

In the RL corpus every sticky fault and every hang ends its worker and a
replacement starts while the next jobs run (BENCHMARKS.md, issue 13): ~2.2
restarts a second on one H100. Those jobs' timing needs more trials than
without faults. Which part of a restart disturbs them? Modes:

  worker    kevald-gpu --no-sandbox: spawn, wait for its HELLO (context,
            modules, cuBLAS handle, the slab allocated and zeroed), close its
            input, wait for it to exit: a whole restart
  worker-noslab
            the same with KEVALD_DEVMEM_POOL_BYTES=0 (no slab, no pool:
            nothing allocated or zeroed at start-up)
  context   a bare process that creates a context (cuInit, the primary
            context, one stream) through ctypes and exits: ctxstart.py's
            child
  none      nothing (the baseline, so that every run has the same shape)

Usage: python3 bench/faults/churn.py MODE [--per-s 2.2] [--seconds S] [--worker PATH]
Runs until --seconds pass or SIGTERM, then prints one JSON line: the mode,
the cycles done, and their start-up (spawn to ready) and exit times, p50.
"""
import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import time

from bystander import read_at_least  # this folder is on sys.path when a script here runs

CTXSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctxstart.py")


def cycle(mode, worker):
    """One start-up and exit; returns (ms to ready, ms to exit after the end of input), or None."""
    env = dict(os.environ)
    env.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # as kevald-gpu sets it for itself
    if mode.startswith("worker"):
        cmd = [worker, "--no-sandbox"]
        env["KEVALD_GPU_INDEX"] = "0"
        if mode == "worker-noslab":
            env["KEVALD_DEVMEM_POOL_BYTES"] = "0"
        need = 16  # a frame header: the HELLO
    else:
        # its child: starts at once, no allocation; one JSON line, "init" first on success
        cmd = [sys.executable, CTXSTART, "--child", repr(time.monotonic()), "0"]
        need = 8
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    buf = read_at_least(p.stdout, need)
    t1 = time.monotonic()
    ok = len(buf) >= need and (mode == "context" and buf.startswith(b'{"init"') or
                               mode != "context" and struct.unpack("<4I", buf[:16])[1] == 1)
    p.stdin.close()
    t2 = time.monotonic()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    t3 = time.monotonic()
    return ((t1 - t0) * 1e3, (t3 - t2) * 1e3) if ok else None


def main():
    ap = argparse.ArgumentParser(description="start and stop GPU processes at a steady rate")
    ap.add_argument("mode", choices=("worker", "worker-noslab", "context", "none"))
    ap.add_argument("--per-s", type=float, default=2.2, help="cycles started per second at most (default 2.2)")
    ap.add_argument("--seconds", type=float, default=3600)
    ap.add_argument("--worker", default="build/worker/kevald-gpu")
    a = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    starts, exits, failed = [], [], 0
    t_end = time.monotonic() + a.seconds
    while not stop and time.monotonic() < t_end:
        t = time.monotonic()
        if a.mode != "none":
            r = cycle(a.mode, a.worker)
            if r:
                starts.append(r[0])
                exits.append(r[1])
            else:
                failed += 1
        rest = 1.0 / a.per_s - (time.monotonic() - t)
        if rest > 0 and not stop:
            time.sleep(rest)
    print(json.dumps({"mode": a.mode, "cycles": len(starts), "failed": failed,
                      "start_ms_p50": round(statistics.median(starts), 1) if starts else None,
                      "exit_ms_p50": round(statistics.median(exits), 1) if exits else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
