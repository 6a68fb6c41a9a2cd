#!/usr/bin/env python3
"""
A CPU stand-in for kevald-gpu, for the dashboard's browser suite: no GPU runs
anything, and every result it sends says so (gpu.name "CPU stand-in ...",
gpu.standin true; the page shows a "stand-in result" badge).

It is tests/integration/fake_gpu_worker.py (the real frame protocol, copied
beside this file into the test's libexec folder) with richer results, so that
every part of the submission view has something to show: per-shape
correctness with first mismatches, timing statistics per shape for candidate
and reference, resources. The candidate's kernel name picks the outcome:

  ..._FAKEV_s<N>    correct, speedup N / 100 (e.g. s150: 1.50x)
  ..._FAKEV_bad     incorrect: 17 elements of buffer c outside the tolerance
  anything else     as the fake worker decides (correct, speedup 1.0)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
import fake_gpu_worker as fake  # noqa: E402

STANDIN = "CPU stand-in (kevald browser tests; no GPU ran this)"
REF_MS = 0.0480


def side(ms, trials):
    return {"median_ms": ms, "mean_ms": ms * 1.02, "stdev_ms": ms * 0.03, "min_ms": ms * 0.97,
            "max_ms": ms * 1.15, "trials": trials, "precision": 0.008}


def shapes(job):
    return [s.get("name", "default") for s in job.get("shapes") or []] or ["default"]


def resources(kernels):
    return [{"kernel": k, "registers": 18, "shared_static": 0, "shared_dynamic": 0, "local": 0, "spill_stores": 0,
             "max_threads_per_block": 1024, "block": 256,
             "occupancy": {"blocks_per_sm": 8, "warps_per_sm": 64, "fraction": 1.0}} for k in kernels]


def buffers(mismatches):
    first = [{"index": 17 + 64 * i, "got": 0.5 + i, "want": 1.25 + i} for i in range(3)] if mismatches else []
    return [{"name": "c", "max_abs": 0.75 if mismatches else 0.0, "max_rel": 0.6 if mismatches else 0.0,
             "mismatches": mismatches, "count": 4096, "nan_inf_mismatches": 0, "first_mismatches": first}]


def result_for(job, mark, t0, t1):
    base = fake_result_for(job, mark, t0, t1)
    base["gpu"] = {"name": STANDIN, "index": 0, "standin": True}
    kernels = fake.candidate_kernels(job)
    names = shapes(job)
    if mark.startswith("s") and mark[1:].isdigit():
        speedup = int(mark[1:]) / 100.0
        cand = REF_MS / speedup
        trials = 120
        base.update(verdict="correct", resources=resources(kernels[:1]), error=None,
                    correctness={"passed": True, "shapes": [
                        {"shape": n, "passed": True, "trials": 3, "guard_ok": True, "inputs_intact": True,
                         "deterministic": True, "revalidated": True, "buffers": buffers(0)} for n in names]},
                    timing={"speedup": speedup, "shapes": [
                        {"shape": n, "candidate": side(cand * (1 + 0.1 * i), trials),
                         "reference": side(REF_MS * (1 + 0.1 * i), trials), "speedup": speedup, "stop": "precision",
                         "roofline": {"min_ms": 0.001, "suspicious": False}} for i, n in enumerate(names)]},
                    gpu_busy_ms=(cand + REF_MS) * trials * len(names))
    elif mark == "bad":
        base.update(verdict="incorrect", resources=resources(kernels[:1]), timing=None,
                    correctness={"passed": False, "shapes": [
                        {"shape": names[0], "passed": False, "trials": 1, "guard_ok": True, "inputs_intact": True,
                         "deterministic": None, "revalidated": None, "buffers": buffers(17)}]},
                    error={"kind": "mismatch", "buffer": "c", "mismatches": 17, "count": 4096,
                           "nan_inf_mismatches": 0, "shape": names[0],
                           "message": "17 of 4096 elements of 'c' differ from the reference"},
                    gpu_busy_ms=0.2)
    return base


def hello():
    h = fake_hello()
    h["name"] = STANDIN
    return h


fake_result_for = fake.result_for
fake_hello = fake.hello
fake.result_for = result_for
fake.hello = hello

if __name__ == "__main__":
    sys.exit(fake.main())
