#!/usr/bin/env python3
"""
results_summary.py FILE... - where the GPU worker's time went, from
`bench/throughput/run.py --results FILE` (one JSON line per submission):
per verdict, the mean of each phase (phases_ms: load, correctness, gate,
timing, cleanup) and of the worker's wall, and for faults found while the
worker waited, how long they took to surface (error.surfaced_ms) and how
many only within fault_grace_ms (error.after_limit); for timed kernels, the trials,
executions per trial (L), how they were launched and why timing stopped.
"""
import collections
import json
import statistics
import sys


def main():
    for path in sys.argv[1:]:
        rows = [json.loads(line) for line in open(path) if line.strip()]
        by = collections.defaultdict(list)
        for r in rows:
            by[r["verdict"]].append(r)
        print("== %s: %d submissions" % (path, len(rows)))
        for v, rs in sorted(by.items(), key=lambda kv: -len(kv[1])):
            walls = [r["wall_ms"] for r in rs if isinstance(r.get("wall_ms"), (int, float))]
            phases = collections.defaultdict(list)
            for r in rs:
                for k, ms in (r.get("phases_ms") or {}).items():
                    phases[k].append(ms)
            line = "%-14s n=%-4d" % (v, len(rs))
            if walls:
                line += " wall mean %.1f p50 %.1f ms;" % (statistics.mean(walls), statistics.median(walls))
            line += " ".join(" %s %.1f" % (k, statistics.mean(x)) for k, x in phases.items())
            # faults: how long after its launch each surfaced, and how many only within fault_grace_ms
            sf = [(r.get("error") or {}).get("surfaced_ms") for r in rs]
            sf = [x for x in sf if isinstance(x, (int, float))]
            if sf:
                line += "; surfaced_ms p50 %.1f max %.1f, after the limit %d" % (
                    statistics.median(sf), max(sf), sum(1 for r in rs if (r.get("error") or {}).get("after_limit")))
            print(line)
        timed = [sh for r in rows for sh in r.get("timing") or []]
        if timed:
            stops = collections.Counter(sh.get("stop") for sh in timed)
            las = collections.Counter(json.dumps(sh.get("launched_as"), sort_keys=True) for sh in timed)
            trials = [sh["trials"] for sh in timed if isinstance(sh.get("trials"), int)]
            ls = [sh["launches_per_trial"] for sh in timed if isinstance(sh.get("launches_per_trial"), int)]
            cms = [sh["cand_ms"] for sh in timed if isinstance(sh.get("cand_ms"), (int, float))]
            sub = collections.defaultdict(list)
            for sh in timed:
                for k, ms in (sh.get("phases_ms") or {}).items():
                    sub[k].append(ms)
            if sub:
                print("timing phases ms, mean / p50: " + ", ".join(
                    "%s %.1f / %.1f" % (k, statistics.mean(x), statistics.median(x)) for k, x in sub.items()))
            print("timed shape sets %d: stop %s; launched_as %s; trials p50 %s max %s sum %s; L p50 %s; "
                  "candidate median_ms p50 %.4f" % (len(timed), dict(stops), dict(las),
                                                    statistics.median(trials) if trials else None,
                                                    max(trials) if trials else None, sum(trials),
                                                    statistics.median(ls) if ls else None,
                                                    statistics.median(cms) if cms else float("nan")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
