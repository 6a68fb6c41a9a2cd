#!/bin/sh
# bench/devmem_pool.sh - what the GPU worker's device-memory pool
# (worker/gpu/devmem.c) saves per evaluation. Two warm kevald-gpu workers on the
# same GPU, one with KEVALD_DEVMEM_POOL_BYTES=0 (no pool: every free zeroes,
# waits for the stream and calls cuMemFree, as before the pool) and one with
# the default pool, take the same small jobs in alternation (bt_copy of
# bench/timing/kernels.cu, 3 correctness trials, fast timing, at a few RL
# sizes). Prints, per size and worker, the medians of the worker's wall_ms,
# its GPU busy time, the overhead (wall - busy), the client round trip and
# the evaluations per minute one worker can do at that round trip.
#
# Run on the GPU host from the repository root, with build/ and .devlibs/:
#   export LD_LIBRARY_PATH=$PWD/.devlibs:/usr/local/cuda/lib64
#   sh bench/devmem_pool.sh [build] [jobs per size and worker, default 40]
# Dry run on a host without a GPU (CPU double of the driver; the numbers
# mean nothing there):
#   FAKE=1 LD_LIBRARY_PATH=build-x/tests/gpu/fake sh bench/devmem_pool.sh build-x 5
# Exit 0 when every job was correct, 1 otherwise, 77 without a GPU.
set -eu
build=${1:-build}
n=${2:-40}
exec python3 - "$build" "$n" <<'EOF'
import os
import statistics
import sys
import time

root = os.getcwd()
sys.path.insert(0, os.path.join(root, "bench", "timing"))
sys.path.insert(0, os.path.join(root, "tests", "gpu"))
import fidelity as fd  # noqa: E402
import run_suite as rs  # noqa: E402

build, n = sys.argv[1], int(sys.argv[2])
fake = os.environ.get("FAKE") == "1"
ok, why = rs.gpu_present()
if not ok and not fake:
    print("devmem pool: skipped: %s" % why)
    sys.exit(77)
blob = b"FAKE:bench\n\0" if fake else open(os.path.join(build, "tests", "gpu", "bench_timing.fatbin"), "rb").read()
gpu_bin = os.path.join(build, "worker", "kevald-gpu")
extra = ["--no-sandbox"] if fake else []

workers = {}
for label, limit in (("no pool", "0"), ("pool", None)):
    if limit is None:
        os.environ.pop("KEVALD_DEVMEM_POOL_BYTES", None)
    else:
        os.environ["KEVALD_DEVMEM_POOL_BYTES"] = limit
    workers[label] = rs.Worker(gpu_bin, extra, False)
os.environ.pop("KEVALD_DEVMEM_POOL_BYTES", None)
h = workers["pool"].hello
sms = h.get("sms") or 132
print("device: %s, driver %s; %d jobs per size and worker, alternating" % (h.get("name"), h.get("driver"), n))

sizes = (1 << 12, 1 << 16, 1 << 20) if not fake else (1 << 12, 1 << 16)
kid, bad = 0, 0
print()
print("| floats | worker | wall ms | GPU busy ms | overhead ms | round trip ms | evaluations/min |")
print("|---|---|---|---|---|---|---|")
for size in sizes:
    rec = {k: {"wall": [], "busy": [], "rt": []} for k in workers}
    for i in range(n + 2):  # the first two of each are warm-up (the pool fills)
        for label, w in workers.items():
            kid += 1
            job = fd.job_for(kid, "copy", "bt_copy", [sms * 8], [256], size, size,
                             ["x", "y", {"type": "i64", "value": size}], len(blob), rs.FAST_TIMING, 3)
            t0 = time.monotonic()
            res, _ = w.run(job, blob, 120)
            rt = (time.monotonic() - t0) * 1e3
            if res.get("verdict") != "correct" or (res.get("cleanup") or {}).get("allocations_left") != 0:
                print("%s: job %d: %s %s" % (label, kid, res.get("verdict"), res.get("error")))
                bad += 1
                continue
            if i >= 2:
                rec[label]["wall"].append(res["wall_ms"])
                rec[label]["busy"].append(res["gpu_busy_ms"])
                rec[label]["rt"].append(rt)
    for label, r in rec.items():
        if not r["wall"]:
            continue
        m = statistics.median
        over = m([a - b for a, b in zip(r["wall"], r["busy"])])
        print("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.0f |" % (size, label, m(r["wall"]), m(r["busy"]), over,
                                                                 m(r["rt"]), 60000.0 / m(r["rt"])))
for w in workers.values():
    w.stop()
print()
print("devmem pool: %s" % ("all jobs correct" if bad == 0 else "%d job(s) failed" % bad))
sys.exit(0 if bad == 0 else 1)
EOF
