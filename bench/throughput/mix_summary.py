#!/usr/bin/env python3
"""
mix_summary.py OUT NAME - one line per figure of issue 13 from the runs that
`scripts/gpu-verify mix` wrote (OUT/mix_NAME_{default,nofault,fast}.json):
evaluations/min at default and fast timing, GPU busy (the workers' own
Σ active / wall, and NVML's utilization), restarts, latency of one small
submission on the idle server, and what a fault costs the GPU: the wall time
the RL corpus took beyond the same corpus without its runtime errors and
timeouts, per such kernel (both runs on one fresh server each, same GPU).
"""
import json
import sys


def load(out, name, v):
    try:
        return json.load(open("%s/mix_%s_%s.json" % (out, name, v)))
    except (OSError, ValueError):
        return None


def main():
    out, name = sys.argv[1], sys.argv[2]
    d, nf, f = (load(out, name, v) for v in ("default", "nofault", "fast"))
    for label, r in (("default", d), ("nofault", nf), ("fast", f)):
        if not r:
            print("%s %s: no result" % (name, label))
            continue
        c = r["corpus"]
        phases = {v: b.get("phases_ms") for v, b in c["gpu_worker_time_by_verdict"].items() if b.get("phases_ms")}
        print("%s %-7s: %d/%d done in %.1f s, %s evals/min (steady %s), busy %s%% (NVML %s%%), restarts %s, "
              "verdicts %s" % (name, label, c["finished"], c["submissions"], c["wall_s"], c["evals_per_min"],
                               c["evals_per_min_steady"], r.get("gpu_active_pct"), r.get("nvml_util_pct"),
                               r.get("gpu_worker_restarts"), json.dumps(c["verdicts"])))
        if r.get("gpu_time_pct"):
            print("%s %-7s: GPU clock %% %s; busy while it had work %s%%" % (
                name, label, json.dumps(r["gpu_time_pct"]), r.get("gpu_active_while_working_pct")))
        if phases:
            print("%s %-7s: phases ms by verdict %s" % (name, label, json.dumps(phases)))
        for k in ("latency_distinct", "latency_same"):
            if r.get(k):
                print("%s %-7s: %s %s" % (name, label, k, json.dumps(r[k])))
    if d and nf:
        cd, cn = d["corpus"], nf["corpus"]
        faults = cd["verdicts"].get("runtime_error", 0) + cd["verdicts"].get("timeout", 0)
        if faults and cd["unfinished"] == 0 and cn["unfinished"] == 0:
            print("%s fault cost: %.1f ms of wall per faulting kernel ((%.2f - %.2f) s / %d; "
                  "runtime_error %d, timeout %d)" % (
                      name, (cd["wall_s"] - cn["wall_s"]) * 1000.0 / faults, cd["wall_s"], cn["wall_s"], faults,
                      cd["verdicts"].get("runtime_error", 0), cd["verdicts"].get("timeout", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
