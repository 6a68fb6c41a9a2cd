#!/usr/bin/env python3
"""
The latency of a Triton submission from the client (issue 28): from
kevald.triton.submission() (compile, plan) through POST /v1/submissions to
the compiled result, in mode "compile" (no GPU run: what is left is the
client's compile, the plan, the server's nvJitLink compile and plan check).

Rounds alternate a cache miss (a new PtxCache and a kernel the server has
not compiled) and a cache hit (the same cache, the same kernel: no Triton
compile, and the server's compile cache answers), so the two are compared
within one run.

    --triton   compile the relu example below with the installed Triton
               (TRITON_ALWAYS_COMPILE=1, so Triton's own cache does not hide
               the compile on a miss); needs Triton
    (default)  a stand-in compiler that returns the Triton-shaped fixture PTX
               (tests/fixtures/triton/relu_handwritten.ptx): everything but
               Triton's own compile

    python3 bench/triton/bench_client.py                       # starts a server from ./build
    python3 bench/triton/bench_client.py --server URL --triton --rounds 40
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "pylib"))
import kevald  # noqa: E402
import kevald.triton as kt  # noqa: E402

FIXTURE = json.loads((ROOT / "tests/fixtures/triton/relu_handwritten.json").read_text())
FIXTURE_PTX = (ROOT / "tests/fixtures/triton/relu_handwritten.ptx").read_text()


class StandIn:
    """What kevald.triton reads of a @triton.jit function, for the fixture's kernel."""
    arg_names = FIXTURE["arg_names"]
    __name__ = "relu_kernel"
    cache_key = "relu_handwritten"

    @staticmethod
    def compiler(fn, signature, constexprs, attrs, cc, options):
        return FIXTURE_PTX, dict(FIXTURE["metadata"]), "3.6.0"


def triton_kernel(block):
    import triton
    import triton.language as tl

    @triton.jit
    def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
    return relu_kernel


def one(client, fn, block, cache, real, arch, tag):
    """One submission; @tag, a comment put before the PTX, makes it new to the server's compile cache."""
    kw = dict(constexprs={"BLOCK": block}, cache=cache, mode="compile", arch=arch)
    if not real:
        kw.update(compiler=StandIn.compiler, version="3.6.0")
    t0 = time.perf_counter()
    sub = kt.submission(client, fn, "l1_19_relu", [f"ceil_div(B * D, {block})"],
                        {"x_ptr": "x", "y_ptr": "y", "n": "B * D"}, **kw)
    sub["source"] = f"// {tag}\n" + sub["source"]
    t1 = time.perf_counter()
    done = client.evaluate(sub, timeout=120)
    t2 = time.perf_counter()
    if done.verdict != "compiled":
        raise SystemExit(f"not compiled: {done.raw}")
    return (t1 - t0) * 1e3, (t2 - t0) * 1e3, done.result.compile.raw.get("cache_hit")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server")
    ap.add_argument("--triton", action="store_true")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--arch", default="sm_90a")
    a = ap.parse_args()
    if a.triton:
        os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    srv = None
    if not a.server:
        from kevaldserver import Server
        srv = Server(tempfile.mkdtemp(prefix="kevald-bench-")).start()
        srv.wait_ready()
        a.server = srv.url
    rows = {"miss": [], "hit": []}
    try:
        with kevald.Client(a.server) as c:
            block = 1024 if a.triton else 128
            for r in range(a.rounds + 1):
                cache, tag = kt.PtxCache(), uuid.uuid4().hex   # new to both caches
                fn = triton_kernel(block) if a.triton else StandIn()
                miss = one(c, fn, block, cache, a.triton, a.arch, tag)
                hit = one(c, fn, block, cache, a.triton, a.arch, tag)
                if r == 0:
                    continue                       # warm-up: imports, first connections
                rows["miss"].append(miss)
                rows["hit"].append(hit)
    finally:
        if srv:
            srv.stop()
    print(f"{'':6} {'build p50':>10} {'build p90':>10} {'total p50':>10} {'total p90':>10}  server cache hits")
    for k, v in rows.items():
        b, t = [x[0] for x in v], [x[1] for x in v]
        print(f"{k:6} {statistics.median(b):9.2f}ms {pct(b, .9):9.2f}ms {statistics.median(t):9.2f}ms "
              f"{pct(t, .9):9.2f}ms  {sum(1 for x in v if x[2])}/{len(v)}")
    print(f"ratio miss/hit of the total p50: "
          f"{statistics.median(x[1] for x in rows['miss']) / statistics.median(x[1] for x in rows['hit']):.2f}")


if __name__ == "__main__":
    main()
