#!/usr/bin/env python3
"""
bench/kernelbench/timeline.py - where a run of the KernelBench samples through kevald went
(issue 29's throughput), from what `scripts/gpu-verify kernelbench` brings back:

    kb_samples.json  each job as the API returned it: created_at, finished_at, the build's
                     compile_ms (a cache miss) and the run's wall_ms
    kb_server.log    (optional) each kevald-torch worker's start: its time and HELLO startup_ms

It prints the span from the first submission to the last result, the builds (how many, how long),
the runs on the GPU (their judging time), and the workers' starts (time, and the import of torch
in them). Where build workers exited after each build (before 0309f7b), the log also dates the last
build's end, and the runs after it.

    timeline.py kb_samples.json [kb_server.log] [--json OUT]
"""
import argparse
import json
import re
import statistics
import sys
from datetime import datetime

LONG_BUILD_S = 20.0   # a build this long compiled an extension (load_inline); shorter ones only imported
BUILD_END = re.compile(r"^(\d\d):(\d\d):([0-9.]+) .*torch-build worker \d+ \(pid \d+\) exited: status 0, signal 0",
                       re.M)
READY = re.compile(r"torch-(run|build) worker \d+ ready \(pid \d+\) in ([0-9.]+) s[^{]*(\{.*\})?")


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def spread(values):
    """(n, min, median, max) of @values, or None when empty."""
    v = sorted(values)
    return (len(v), v[0], statistics.median(v), v[-1]) if v else None


def fmt(s, unit="s", scale=1.0):
    return "none" if s is None else f"{s[0]}: {s[1] * scale:.1f}-{s[3] * scale:.1f} {unit}, median {s[2] * scale:.1f}"


def jobs_of(samples):
    out = []
    for name, k in samples["kevald"].items():
        raw = k.get("raw") or {}
        res = raw.get("result") or {}
        comp = res.get("compile") or {}
        if not raw.get("created_at") or not raw.get("finished_at"):
            continue
        out.append({"name": name, "created": ts(raw["created_at"]), "finished": ts(raw["finished_at"]),
                    "started": ts(raw.get("started_at") or raw["created_at"]),
                    "build_s": (comp.get("compile_ms") or 0) / 1000.0 if comp.get("cache_hit") is False else None,
                    "run_s": (res.get("wall_ms") or 0) / 1000.0, "verdict": raw.get("verdict")})
    return out


def starts_of(log_text):
    out = {"run": [], "build": []}
    for m in READY.finditer(log_text):
        steps = json.loads(m.group(3)) if m.group(3) else {}
        out[m.group(1)].append({"s": float(m.group(2)), "import_s": steps.get("import", 0) / 1000.0})
    return out


def summary(samples, log_text=None):
    jobs = jobs_of(samples)
    t0 = min(j["created"] for j in jobs)
    end = max(j["finished"] for j in jobs)
    built = [j for j in jobs if j["build_s"]]
    long_ = [j for j in built if j["build_s"] >= LONG_BUILD_S]
    s = {"jobs": len(jobs), "span_s": end - t0, "builds": spread([j["build_s"] for j in built]),
         "long_builds": spread([j["build_s"] for j in long_]), "runs": spread([j["run_s"] for j in jobs])}
    if log_text:
        # a build worker exits (0, no signal) when its build is answered; the log's clock is UTC
        day = t0 - t0 % 86400
        ends = [day + int(h) * 3600 + int(m) * 60 + float(sec) - t0 for h, m, sec in BUILD_END.findall(log_text)]
        ends = [e for e in ends if 0 <= e <= end - t0 + 1]
        if ends:
            last = max(ends)
            after = [j for j in jobs if j["finished"] - t0 > last]
            s.update({"last_build_end_s": last, "runs_after_last_build": len(after),
                      "judging_after_last_build_s": sum(j["run_s"] for j in after)})
        st = starts_of(log_text)
        s["run_worker_starts"] = spread([x["s"] for x in st["run"]])
        s["run_worker_imports"] = spread([x["import_s"] for x in st["run"]])
        s["build_worker_starts"] = spread([x["s"] for x in st["build"]])
    return s


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("log", nargs="?")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    with open(a.samples) as f:
        samples = json.load(f)
    text = open(a.log, errors="replace").read() if a.log else None
    s = summary(samples, text)
    print(f"{s['jobs']} jobs in {s['span_s']:.1f} s (first submission to last result)")
    print(f"builds (cache misses) {fmt(s['builds'])}; of which >= {LONG_BUILD_S:g} s (an extension compiled) "
          f"{fmt(s['long_builds'])}")
    print(f"runs (judging, wall) {fmt(s['runs'])}")
    if "last_build_end_s" in s:
        print(f"the last build ended at {s['last_build_end_s']:.1f} s; {s['runs_after_last_build']} runs ended after "
              f"it, {s['judging_after_last_build_s']:.1f} s of judging")
    if text:
        print(f"run worker starts {fmt(s['run_worker_starts'])}; import torch in them "
              f"{fmt(s['run_worker_imports'])}")
        print(f"build worker starts {fmt(s['build_worker_starts'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
