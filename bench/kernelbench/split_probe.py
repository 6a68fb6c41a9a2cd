#!/usr/bin/env python3
"""
split_probe - can the run role's judge time a candidate that runs in a process
of its own, as accurately as it times one in its own interpreter, and without
taking the candidate's word for anything? (issue 29: today the candidate runs
in the judge's interpreter, docs/kernelbench.md "Still open".)

Two processes on one GPU: the judge (this process) and a child standing in for
the candidate's process. The judge owns the input and output buffers (CUDA IPC:
the child maps them) and one IPC event, GO; the child owns two IPC events, DONE
(recorded after its forward) and COPIED (after it copied its output into the
judge's buffer). One timed run:

  judge: fresh inputs; L2 flush; a spin kernel of G µs (the gate); start event;
         GO recorded; "go" sent to the child
  child: its stream waits for GO; forward; DONE; output copied; COPIED; "launched"
  judge: its stream waits for DONE; end event; waits for COPIED; compares the
         output with its own computation on the same inputs; start->end is the
         candidate's time, measured by the judge's own events

Without the gate the judge's start would be recorded before the child even read
"go" (pipe and Python latency counted as GPU time). Contexts of two processes
share the GPU by time slices, never at once: the judge's end event cannot pass
while the child's work holds the GPU within a slice; a child that records DONE
early gains time only where a slice ends in the middle of its work, and then
the judge's comparison (in the same slice) reads an output not yet written.

Measured per workload (medians of --runs after --warmup, alternated):
  in      the judge runs the workload itself between its events (today's way)
  child   the child's own events around its forward (what it could report)
  split   the judge's events around the child's work (the design above)
and, for lying children (DONE recorded before the work, never recorded, or the
work on a side stream), what the judge measured and how many comparisons failed.
Also: child start (import torch + CUDA context), IPC mapping cost, and whether
all of it works with the child inside kevald's torch-run sandbox (--confine).

  python3 bench/kernelbench/split_probe.py [--confine] [--json OUT]
"""
import argparse
import json
import os
import pickle
import socket
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name -> (input floats, output floats); the work itself is in work()
WORKLOADS = {
    "relu_4k": (1 << 12, 1 << 12), "relu_64k": (1 << 16, 1 << 16), "relu_1m": (1 << 20, 1 << 20),
    "relu_16m": (1 << 24, 1 << 24), "relu_64m": (1 << 26, 1 << 26),
    "mm_512": (512 * 512, 512 * 512), "mm_2048": (2048 * 2048, 2048 * 2048), "mm_8192": (8192 * 8192, 8192 * 8192),
    "seq10_1m": (1 << 20, 1 << 20), "chain50_16m": (1 << 24, 1 << 24), "late_write_5ms": (1 << 24, 1 << 24),
}


def work(torch, name, x, w, cycles_per_us):
    """The workload @name on input @x (a flat float tensor); returns a new tensor."""
    if name.startswith("relu_"):
        return torch.relu(x)
    if name.startswith("mm_"):
        n = int(name[3:])
        return torch.mm(x.view(n, n), w[:n * n].view(n, n)).view(-1)
    if name == "seq10_1m":
        y = x
        for i in range(10):
            y = y * 1.0001 + 0.5 if i % 2 == 0 else torch.tanh(y)
        return y
    if name == "chain50_16m":
        y = x
        for _ in range(50):
            y = torch.relu(y - 0.001)
        return y
    if name == "late_write_5ms":     # long work, the output written only at its end
        torch.cuda._sleep(int(5000 * cycles_per_us))
        return torch.relu(x)
    raise ValueError(name)


# ---- messages: 4-byte length, pickle (both ends are this script) ----
def send(sock, obj):
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("<I", len(data)) + data)


def recv(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the other side closed")
            buf += chunk
        return buf
    (n,) = struct.unpack("<I", exact(4))
    return pickle.loads(exact(n))


class _Cai:
    """A device pointer as __cuda_array_interface__ (torch.as_tensor maps it, no copy)."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}


def _cuda():
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    return ctypes, lib


def raw_share(t):
    """(64-byte IPC handle, offset, floats) of tensor @t through the driver API (no torch refcounting)."""
    ctypes, lib = _cuda()
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    r = lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr()))
    if r:
        raise RuntimeError(f"cuMemGetAddressRange: {r}")
    h = (ctypes.c_char * 64)()
    r = lib.cuIpcGetMemHandle(h, base)
    if r:
        raise RuntimeError(f"cuIpcGetMemHandle: {r}")
    return bytes(h), t.data_ptr() - base.value, t.numel()


def raw_open(torch, shared):
    handle, off, n = shared
    ctypes, lib = _cuda()
    ptr = ctypes.c_uint64()
    h = (ctypes.c_char * 64).from_buffer_copy(handle)
    r = lib.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), h, ctypes.c_uint(1))
    if r:
        raise RuntimeError(f"cuIpcOpenMemHandle: {r}")
    return torch.as_tensor(_Cai(ptr.value + off, n), device="cuda")


def sleep_rate(torch):
    """GPU spin cycles per microsecond (torch.cuda._sleep), measured."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    s.record()
    torch.cuda._sleep(2_000_000)
    e.record()
    e.synchronize()
    return 2_000_000 / (s.elapsed_time(e) * 1000.0)


# ---- the child ----
def child_main(fd, confine):
    t0 = time.monotonic()
    sock = socket.socket(fileno=fd)
    layers = None
    if confine:
        sys.path.insert(0, os.path.join(ROOT, "worker", "torch"))
        from kevald_torch.confine import Confine
        from kevald_torch.main import python_trees, PATHS_MAX
        c, err = Confine.load(os.path.join(ROOT, "build", "worker", "libkevald-confine.so"), -1)
        err = err or c.enter("torch-run", read=python_trees()[:PATHS_MAX], keep_fds=[fd])
        if err:
            send(sock, {"error": f"confine: {err}", "layers": c.layers})
            return 1
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    torch.zeros(1, device="cuda").add_(1).item()
    if confine:
        err = c.lock()
        if err:
            send(sock, {"error": f"lock: {err}", "layers": c.layers})
            return 1
        layers = c.layers
    t_ready = time.monotonic() - t0
    dev = torch.device("cuda", 0)
    cyc = sleep_rate(torch)
    done, copied = torch.cuda.Event(interprocess=True), torch.cuda.Event(interprocess=True)
    send(sock, {"ready_s": t_ready, "done": done.ipc_handle(), "copied": copied.ipc_handle(), "layers": layers})
    side = torch.cuda.Stream()
    stream = torch.cuda.current_stream()
    bufs = {}
    c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    last = None
    while True:
        m = recv(sock)
        op = m["op"]
        if op == "quit":
            return 0
        if op == "map":
            t = time.monotonic()
            try:
                if m["raw"]:
                    x, y = raw_open(torch, m["x"]), raw_open(torch, m["y"])
                else:
                    x = m["x"][0](*m["x"][1])
                    y = m["y"][0](*m["y"][1])
                go = torch.cuda.Event.from_ipc_handle(dev, m["go"])
            except Exception as e:  # noqa: BLE001
                send(sock, {"error": f"mapping: {type(e).__name__}: {e}"})
                continue
            g = torch.Generator(device="cuda").manual_seed(7)
            w = torch.randn(x.numel(), device="cuda", generator=g) if m["weights"] else None
            bufs = {"x": x, "y": y, "go": go, "w": w}
            torch.cuda.synchronize()
            send(sock, {"map_ms": (time.monotonic() - t) * 1000.0})
            continue
        # op == "run"
        if last is not None:
            c1.synchronize()
            last = c0.elapsed_time(c1)
        name, mode = m["work"], m["mode"]
        n_in, n_out = WORKLOADS[name]
        x, y, go = bufs["x"][:n_in], bufs["y"][:n_out], bufs["go"]
        stream.wait_event(go)
        if mode == "early":
            done.record()
        c0.record()
        if mode == "side":
            side.wait_event(go)
            with torch.cuda.stream(side):
                out = work(torch, name, x, bufs["w"], cyc)
                y.copy_(out)
        else:
            out = work(torch, name, x, bufs["w"], cyc)
        c1.record()
        if mode in ("honest", "side"):
            done.record()
        if mode != "side":
            y.copy_(out)
        if mode != "never":
            copied.record()
        last = last if last is not None else 0.0
        send(sock, {"child_prev_ms": last})
        last = True


# ---- the judge ----
def med(v):
    return statistics.median(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--confine", action="store_true", help="the child inside kevald's torch-run sandbox")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--gate-us", type=float, default=300.0)
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if a.child is not None:
        return child_main(a.child, a.confine)

    import torch
    from torch.multiprocessing.reductions import reduce_tensor
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    out = {"host": torch.cuda.get_device_name(0), "torch": torch.__version__, "confine": a.confine,
           "gate_us": a.gate_us, "workloads": {}, "lies": {}}
    cyc = sleep_rate(torch)
    out["sleep_cycles_per_us"] = cyc
    ours, theirs = socket.socketpair()
    t = time.monotonic()
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(theirs.fileno())]
                         + (["--confine"] if a.confine else []), pass_fds=[theirs.fileno()], env=env)
    theirs.close()
    hello = recv(ours)
    if "error" in hello:
        print("child failed:", hello)
        out["error"] = hello
        if a.json:
            json.dump(out, open(a.json, "w"), indent=1)
        return 1
    out["child_start_s"] = time.monotonic() - t
    out["child_ready_s"] = hello["ready_s"]
    out["child_layers"] = hello["layers"]
    dev = torch.device("cuda", 0)
    done = torch.cuda.Event.from_ipc_handle(dev, hello["done"])
    copied = torch.cuda.Event.from_ipc_handle(dev, hello["copied"])
    go = torch.cuda.Event(interprocess=True)
    nmax = max(v[0] for v in WORKLOADS.values())
    x = torch.empty(nmax, device="cuda")
    y = torch.empty(nmax, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(7)
    w = torch.randn(nmax, device="cuda", generator=g)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 256 << 20), dtype=torch.uint8, device="cuda")
    t = time.monotonic()
    send(ours, {"op": "map", "x": reduce_tensor(x), "y": reduce_tensor(y), "go": go.ipc_handle(), "weights": True,
                "raw": False})
    r = recv(ours)
    out["ipc"] = "torch.multiprocessing"
    if "error" in r:
        print("torch's IPC mapping failed:", r["error"], "- trying the driver API's")
        out["torch_ipc_error"] = r["error"]
        t = time.monotonic()
        send(ours, {"op": "map", "x": raw_share(x), "y": raw_share(y), "go": go.ipc_handle(), "weights": True,
                    "raw": True})
        r = recv(ours)
        out["ipc"] = "driver API"
    if "error" in r:
        print("mapping failed:", r["error"])
        out["error"] = r
        send(ours, {"op": "quit"})
        p.wait(30)
        if a.json:
            json.dump(out, open(a.json, "w"), indent=1)
        return 1
    out["map_ms_child"] = r["map_ms"]
    out["map_ms_round_trip"] = (time.monotonic() - t) * 1000.0
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.current_stream()
    gen = torch.Generator(device="cuda")

    def fresh(n, k):
        gen.manual_seed(1000 + k)
        x[:n].normal_(generator=gen)

    def in_process(name, k):
        n_in, _ = WORKLOADS[name]
        fresh(n_in, k)
        flush.zero_()
        s.record()
        r = work(torch, name, x[:n_in], w, cyc)
        e.record()
        e.synchronize()
        return s.elapsed_time(e), r

    def split(name, k, mode="honest"):
        """(judge ms, host round trip ms, child's ms of its previous run, comparison ok)."""
        n_in, n_out = WORKLOADS[name]
        fresh(n_in, k)
        y[:n_out].fill_(float("nan"))
        flush.zero_()
        torch.cuda._sleep(int(a.gate_us * cyc))
        s.record()
        go.record()
        t0 = time.monotonic()
        send(ours, {"op": "run", "work": name, "mode": mode})
        rep = recv(ours)
        rt = (time.monotonic() - t0) * 1000.0
        stream.wait_event(done)
        e.record()
        stream.wait_event(copied)
        want = work(torch, name, x[:n_in], w, cyc)
        got = y[:n_out]
        if name.startswith("mm_"):
            ok = bool(torch.allclose(got, want, rtol=1e-3, atol=1e-2))
        else:
            ok = bool(torch.equal(got, want))
        e.synchronize()
        return s.elapsed_time(e), rt, rep["child_prev_ms"], ok

    names = [n for n in WORKLOADS if n != "late_write_5ms"]
    if a.only:
        names = [n for n in a.only.split(",") if n in WORKLOADS]
    for name in names:
        ti, ts, rts, tc, bad = [], [], [], [], 0
        for k in range(a.warmup + a.runs):
            t_in, _ = in_process(name, k)
            t_sp, rt, prev, ok = split(name, k)
            bad += not ok
            if k >= a.warmup:
                ti.append(t_in)
                ts.append(t_sp)
                rts.append(rt)
                if k > a.warmup:
                    tc.append(prev)   # the child's own time of run k-1
        row = {"in_ms": med(ti), "child_ms": med(tc), "split_ms": med(ts), "round_trip_ms": med(rts),
               "split_minus_child_us": (med(ts) - med(tc)) * 1000.0 if tc else None,
               "split_over_in": med(ts) / med(ti), "child_over_in": med(tc) / med(ti) if tc else None,
               "in_spread": (max(ti) - min(ti)) / med(ti), "split_spread": (max(ts) - min(ts)) / med(ts),
               "failed_comparisons": bad}
        out["workloads"][name] = row
        print(f"{name:14s} in {row['in_ms']:.4f}  child {row['child_ms'] or 0:.4f}  split {row['split_ms']:.4f} ms"
              f"  split/in {row['split_over_in']:.3f}  split-child {row['split_minus_child_us'] or 0:.1f} us"
              f"  rt {row['round_trip_ms']:.3f} ms  bad {bad}", flush=True)

    for name in ("relu_64m", "chain50_16m", "mm_8192", "late_write_5ms"):
        if a.only and name not in names and name != "late_write_5ms":
            continue
        honest = out["workloads"].get(name, {}).get("in_ms")
        if honest is None:
            honest = med([in_process(name, k)[0] for k in range(5)])
        for mode in ("early", "never", "side"):
            tm, oks, bad = [], [], 0
            for k in range(a.runs):
                t_sp, _, _, ok = split(name, 5000 + k, mode)
                tm.append(t_sp)
                oks.append(ok)
                bad += not ok
            row = {"honest_in_ms": honest, "judge_ms": med(tm), "judge_min_ms": min(tm), "failed_comparisons": bad,
                   "runs": a.runs, "passed_under_0.8_honest": sum(1 for v, ok in zip(tm, oks) if ok and v < 0.8 * honest)}
            out["lies"][f"{name}/{mode}"] = row
            print(f"lie {name:14s} {mode:6s} honest {honest:.4f}  judge median {row['judge_ms']:.4f}"
                  f" min {row['judge_min_ms']:.4f} ms  failed comparisons {bad}/{a.runs}"
                  f"  passed yet < 0.8x honest {row['passed_under_0.8_honest']}", flush=True)
            # a lying run can leave the child's work queued: let it drain before the next
            torch.cuda.synchronize()
            time.sleep(0.05)
    send(ours, {"op": "quit"})
    p.wait(30)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
