#!/usr/bin/env python3
"""
split_probe - can the run role's judge time a candidate that runs in a process
of its own, as accurately as it times one in its own interpreter, and without
taking the candidate's word for anything? (issue 29: today the candidate runs
in the judge's interpreter, docs/kernelbench.md "Still open".)

Two processes on one GPU: the judge (this process) and a child standing in for
the candidate's process. Version 2 (version 1, commit b5d8b05, gated with a
spin kernel and IPC events: BENCHMARKS.md says what it found). The judge owns
every shared thing:
  * the input buffer and a flag word pair on the GPU, mapped by the child
    through the driver's IPC (cuIpcGetMemHandle: no IPC events, which need
    /dev/shm);
  * a page of host memory (memfd) both spin on: "go k" from the judge,
    "launched k" from the child with its output's IPC handle;
  * the child's output is mapped by the judge (cached per handle): no copy.
One timed run k:

  judge: fresh inputs; its own result on them (untimed); L2 flush; start event;
         GPU flag GO := k (cuStreamWriteValue32); host "go k"
  child: sees "go k" (spinning); its stream waits for GO >= k
         (cuStreamWaitValue32); forward; GPU flag DONE := k; host
         "launched k" with its output's handle
  judge: sees "launched k"; its stream waits for DONE >= k; end event; at
         once compares the child's output with its own result

start->end is measured by the judge's events; the comparison follows the end
event in the judge's stream, so a child that sets DONE before its work is
done has its output read before it is written.

Measured per workload (medians of --runs after --warmup, alternated):
  in      the judge runs the workload itself between its events (today's way)
  child   the child's own events around its forward (what it could report)
  split   the judge's events around the child's work (the design above)
and, for lying children (DONE before the work; the work on a side stream),
what the judge measured and how many comparisons failed. Also the child's
start (import torch, CUDA context), the IPC mapping cost, and whether it all
works with the child inside kevald's torch-run sandbox (--confine).

  python3 bench/kernelbench/split_probe.py [--confine] [--json OUT]
"""
import argparse
import json
import os
import mmap
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


# ---- setup messages over a socket (os.read/os.write: read and write are what the sandbox allows) ----
def send(fd, obj):
    data = pickle.dumps(obj)
    data = struct.pack("<I", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def recv(fd):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError("the other side closed")
            buf += chunk
        return buf
    (n,) = struct.unpack("<I", exact(4))
    return pickle.loads(exact(n))


# ---- the driver API (ctypes): IPC memory and stream memory operations ----
class _Cai:
    """A device pointer as __cuda_array_interface__ (torch.as_tensor maps it, no copy)."""

    def __init__(self, ptr, nbytes, typestr="<f4", itemsize=4):
        self.__cuda_array_interface__ = {"shape": (nbytes // itemsize,), "typestr": typestr,
                                         "data": (ptr, False), "version": 3}


class Driver:
    GEQ = 0x0

    def __init__(self):
        import ctypes
        self.c = ctypes
        self.lib = ctypes.CDLL("libcuda.so.1")

        class Handle(ctypes.Structure):     # CUipcMemHandle: 64 bytes, passed by value to the open
            _fields_ = [("reserved", ctypes.c_char * 64)]
        self.Handle = Handle
        self.lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), Handle, ctypes.c_uint]
        self.lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(Handle), ctypes.c_uint64]
        self.wait = getattr(self.lib, "cuStreamWaitValue32_v2", None) or self.lib.cuStreamWaitValue32
        self.write = getattr(self.lib, "cuStreamWriteValue32_v2", None) or self.lib.cuStreamWriteValue32
        for f in (self.wait, self.write):
            f.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]

    def check(self, r, what):
        if r:
            raise RuntimeError(f"{what}: CUresult {r}")

    def share(self, ptr):
        """(64-byte IPC handle, offset) of the allocation holding device pointer @ptr."""
        c = self.c
        base, size = c.c_uint64(), c.c_size_t()
        self.check(self.lib.cuMemGetAddressRange_v2(c.byref(base), c.byref(size), c.c_uint64(ptr)),
                   "cuMemGetAddressRange")
        h = self.Handle()
        self.check(self.lib.cuIpcGetMemHandle(c.byref(h), base.value), "cuIpcGetMemHandle")
        return c.string_at(c.addressof(h), 64), ptr - base.value

    def open(self, handle):
        c = self.c
        ptr = c.c_uint64()
        h = self.Handle.from_buffer_copy(handle)
        self.check(self.lib.cuIpcOpenMemHandle_v2(c.byref(ptr), h, 1), "cuIpcOpenMemHandle")
        return ptr.value

    def wait_geq(self, stream, addr, k):
        self.check(self.wait(stream, addr, k, self.GEQ), "cuStreamWaitValue32")

    def write_value(self, stream, addr, k):
        self.check(self.write(stream, addr, k, 0), "cuStreamWriteValue32")


# ---- the host page: u64 slots ----
GO, LAUNCHED, WORK, MODE, CHILD_NS, OUT_OFF, OUT_BYTES, CHILD_K = 0, 1, 2, 3, 4, 5, 6, 7
HANDLE_AT = 128
MODES = ("honest", "early", "side")


def put(m, slot, v):
    struct.pack_into("<Q", m, slot * 8, v)


def get(m, slot):
    return struct.unpack_from("<Q", m, slot * 8)[0]


def spin(m, slot, k, limit_s=30.0):
    t = time.monotonic()
    while get(m, slot) < k:
        if time.monotonic() - t > limit_s:
            raise TimeoutError(f"slot {slot} never reached {k}")


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
def child_main(fd, page_fd, confine):
    t0 = time.monotonic()
    layers = None
    if confine:
        sys.path.insert(0, os.path.join(ROOT, "worker", "torch"))
        from kevald_torch.confine import Confine
        from kevald_torch.main import python_trees, PATHS_MAX
        c, err = Confine.load(os.path.join(ROOT, "build", "worker", "libkevald-confine.so"), -1)
        err = err or c.enter("torch-run", read=python_trees()[:PATHS_MAX], keep_fds=[fd, page_fd])
        if err:
            send(fd, {"error": f"confine: {err}", "layers": c.layers})
            return 1
    page = mmap.mmap(page_fd, 4096)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    torch.zeros(1, device="cuda").add_(1).item()
    drv = Driver()
    if confine:
        err = c.lock()
        if err:
            send(fd, {"error": f"lock: {err}", "layers": c.layers})
            return 1
        layers = c.layers
    cyc = sleep_rate(torch)
    send(fd, {"ready_s": time.monotonic() - t0, "layers": layers})
    m = recv(fd)
    t = time.monotonic()
    try:
        xp = drv.open(m["x"][0]) + m["x"][1]
        fp = drv.open(m["flags"][0]) + m["flags"][1]
    except Exception as e:  # noqa: BLE001
        send(fd, {"error": f"mapping: {type(e).__name__}: {e}"})
        return 1
    x = torch.as_tensor(_Cai(xp, m["x_bytes"]), device="cuda")
    g = torch.Generator(device="cuda").manual_seed(7)
    w = torch.randn(x.numel(), device="cuda", generator=g)
    torch.cuda.synchronize()
    send(fd, {"map_ms": (time.monotonic() - t) * 1000.0})
    names = list(WORKLOADS)
    stream = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    k, shared = 0, {}
    while True:
        k += 1
        spin(page, GO, k, limit_s=600.0)
        name, mode = names[get(page, WORK)] if get(page, WORK) < len(names) else None, MODES[get(page, MODE)]
        if name is None:
            return 0
        n_in, _ = WORKLOADS[name]
        xs = x[:n_in]
        drv.wait_geq(stream.cuda_stream, fp, k)
        if mode == "early":
            drv.write_value(stream.cuda_stream, fp + 4, k)
        c0.record()
        if mode == "side":
            drv.wait_geq(side.cuda_stream, fp, k)
            with torch.cuda.stream(side):
                out = work(torch, name, xs, w, cyc)
        else:
            out = work(torch, name, xs, w, cyc)
        c1.record()
        if mode != "early":
            drv.write_value(stream.cuda_stream, fp + 4, k)
        key = out.data_ptr()
        if key not in shared:
            shared[key] = drv.share(key)
        handle, off = shared[key]
        page[HANDLE_AT:HANDLE_AT + 64] = handle
        put(page, OUT_OFF, off)
        put(page, OUT_BYTES, out.numel() * out.element_size())
        put(page, LAUNCHED, k)   # out stays alive until the next run's forward replaces it: the judge reads it
        c1.synchronize()
        put(page, CHILD_NS, int(c0.elapsed_time(c1) * 1e6))
        put(page, CHILD_K, k)


# ---- the judge ----
def med(v):
    return statistics.median(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--page", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--confine", action="store_true", help="the child inside kevald's torch-run sandbox")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if a.child is not None:
        return child_main(a.child, a.page, a.confine)

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    drv = Driver()
    out = {"host": torch.cuda.get_device_name(0), "torch": torch.__version__, "confine": a.confine,
           "workloads": {}, "lies": {}}
    cyc = sleep_rate(torch)
    page_fd = os.memfd_create("kevald-split")
    os.ftruncate(page_fd, 4096)
    page = mmap.mmap(page_fd, 4096)
    ours, theirs = socket.socketpair()
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(theirs.fileno()),
                          "--page", str(page_fd)] + (["--confine"] if a.confine else []),
                         pass_fds=[theirs.fileno(), page_fd])
    theirs.close()
    fd = ours.fileno()

    def finish(rc):
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
        return rc

    hello = recv(fd)
    if "error" in hello:
        print("child failed:", hello)
        out["error"] = hello
        return finish(1)
    out["child_start_s"], out["child_ready_s"], out["child_layers"] = time.monotonic() - t, hello["ready_s"], \
        hello["layers"]
    nmax = max(v[0] for v in WORKLOADS.values())
    x = torch.empty(nmax, device="cuda")
    flags = torch.zeros(1 << 19, dtype=torch.int32, device="cuda")    # 2 MiB: an allocation of its own
    fp = flags.data_ptr()
    g = torch.Generator(device="cuda").manual_seed(7)
    w = torch.randn(nmax, device="cuda", generator=g)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 256 << 20), dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    t = time.monotonic()
    send(fd, {"x": drv.share(x.data_ptr()), "x_bytes": x.numel() * 4, "flags": drv.share(fp)})
    r = recv(fd)
    if "error" in r:
        print("mapping failed:", r["error"])
        out["error"] = r
        return finish(1)
    out["map_ms_child"], out["map_ms_round_trip"] = r["map_ms"], (time.monotonic() - t) * 1000.0
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.current_stream()
    gen = torch.Generator(device="cuda")
    names = list(WORKLOADS)
    mapped = {}
    state = {"k": 0, "open_ms": []}

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
        """(judge ms, comparison ok, host ms from go to launched)."""
        n_in, _ = WORKLOADS[name]
        fresh(n_in, k)
        want = work(torch, name, x[:n_in], w, cyc)
        state["k"] += 1
        kk = state["k"]
        put(page, WORK, names.index(name))
        put(page, MODE, MODES.index(mode))
        flush.zero_()
        s.record()
        drv.write_value(stream.cuda_stream, fp, kk)
        t0 = time.monotonic()
        put(page, GO, kk)
        spin(page, LAUNCHED, kk)
        host_ms = (time.monotonic() - t0) * 1000.0
        handle = bytes(page[HANDLE_AT:HANDLE_AT + 64])
        if handle not in mapped:
            t1 = time.monotonic()
            mapped[handle] = drv.open(handle)
            state["open_ms"].append((time.monotonic() - t1) * 1000.0)
        nbytes = get(page, OUT_BYTES)
        got = torch.as_tensor(_Cai(mapped[handle] + get(page, OUT_OFF), nbytes), device="cuda")
        drv.wait_geq(stream.cuda_stream, fp + 4, kk)
        e.record()
        if name.startswith("mm_"):
            ok = got.shape == want.shape and bool(torch.allclose(got, want, rtol=1e-3, atol=1e-2))
        else:
            ok = got.shape == want.shape and bool(torch.equal(got, want))
        e.synchronize()
        torch.cuda.synchronize()
        return s.elapsed_time(e), ok, host_ms

    def child_ms():
        spin(page, CHILD_K, state["k"])
        return get(page, CHILD_NS) / 1e6

    sel = [n for n in names if n != "late_write_5ms"]
    if a.only:
        sel = [n for n in a.only.split(",") if n in WORKLOADS]
    for name in sel:
        ti, ts, tc, hs, bad = [], [], [], [], 0
        for k in range(a.warmup + a.runs):
            t_in, _ = in_process(name, k)
            t_sp, ok, h = split(name, k)
            time.sleep(0.002)
            bad += not ok
            if k >= a.warmup:
                ti.append(t_in)
                ts.append(t_sp)
                tc.append(child_ms())
                hs.append(h)
        row = {"in_ms": med(ti), "child_ms": med(tc), "split_ms": med(ts), "go_to_launched_ms": med(hs),
               "split_minus_child_us": (med(ts) - med(tc)) * 1000.0, "split_minus_in_us": (med(ts) - med(ti)) * 1000.0,
               "split_over_in": med(ts) / med(ti),
               "in_spread": (max(ti) - min(ti)) / med(ti), "split_spread": (max(ts) - min(ts)) / med(ts),
               "failed_comparisons": bad}
        out["workloads"][name] = row
        print(f"{name:14s} in {row['in_ms']:.4f}  child {row['child_ms']:.4f}  split {row['split_ms']:.4f} ms"
              f"  split/in {row['split_over_in']:.3f}  split-in {row['split_minus_in_us']:.1f} us"
              f"  split-child {row['split_minus_child_us']:.1f} us  go->launched {row['go_to_launched_ms']:.3f} ms"
              f"  bad {bad}", flush=True)
    out["ipc_open_ms"] = state["open_ms"]

    for name in ("relu_64m", "chain50_16m", "mm_8192", "late_write_5ms"):
        if a.only and name not in sel:
            continue
        honest = out["workloads"].get(name, {}).get("in_ms")
        if honest is None:
            honest = med([in_process(name, k)[0] for k in range(5)])
        for mode in ("early", "side"):
            tm, oks = [], []
            for k in range(a.runs):
                t_sp, ok, _ = split(name, 5000 + k, mode)
                tm.append(t_sp)
                oks.append(ok)
            passed_fast = sum(1 for v, ok in zip(tm, oks) if ok and v < 0.8 * honest)
            row = {"honest_in_ms": honest, "judge_ms": med(tm), "judge_min_ms": min(tm),
                   "failed_comparisons": oks.count(False), "runs": a.runs, "passed_under_0.8_honest": passed_fast}
            out["lies"][f"{name}/{mode}"] = row
            print(f"lie {name:14s} {mode:6s} honest {honest:.4f}  judge median {row['judge_ms']:.4f}"
                  f" min {row['judge_min_ms']:.4f} ms  failed comparisons {oks.count(False)}/{a.runs}"
                  f"  passed yet < 0.8x honest {passed_fast}", flush=True)
    state["k"] += 1
    put(page, WORK, len(names))
    put(page, GO, state["k"])
    p.wait(30)
    return finish(0)


if __name__ == "__main__":
    sys.exit(main())
