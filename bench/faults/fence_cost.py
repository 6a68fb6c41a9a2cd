#!/usr/bin/env python3
"""
fence_cost.py BASE NEW - what the fenced build costs and saves, from two
`bench/throughput/run.py --results` files of the same corpus (BASE: a build
or a server without the fence; NEW: with it), paired by corpus id:

  - the correctness phase (phases_ms.correctness) of every submission that
    is correct in both: p50 and p90 of NEW/BASE per submission, and the p50
    of each side (issue 23: the fenced phase at most 2x, p50);
  - every runtime_error of NEW: how many were fenced (error.fenced), and
    what such a job cost the GPU worker (wall_ms, gpu_active_ms: p50 and
    max), against BASE's runtime errors;
  - verdicts that differ between the two (should be none but fault names).
Python 3 standard library only.
"""
import json
import statistics
import sys


def load(path):
    return {r["id"]: r for r in (json.loads(line) for line in open(path) if line.strip())}


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))] if xs else float("nan")


def fmt(xs):
    return "p50 %.2f p90 %.2f max %.2f (n=%d)" % (q(xs, 0.5), q(xs, 0.9), max(xs) if xs else float("nan"), len(xs))


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    base, new = load(sys.argv[1]), load(sys.argv[2])
    both = [i for i in new if i in base]
    corr = [i for i in both if base[i]["verdict"] == new[i]["verdict"] == "correct"
            and (base[i].get("phases_ms") or {}).get("correctness") and (new[i].get("phases_ms") or {}).get("correctness")]
    ratios = [new[i]["phases_ms"]["correctness"] / base[i]["phases_ms"]["correctness"] for i in corr]
    print("correctness phase, correct in both: NEW/BASE %s" % fmt(ratios))
    print("  BASE ms %s" % fmt([base[i]["phases_ms"]["correctness"] for i in corr]))
    print("  NEW  ms %s; fenced %d of %d" % (fmt([new[i]["phases_ms"]["correctness"] for i in corr]),
                                            sum(1 for i in corr if new[i].get("fenced")), len(corr)))
    for name, d in (("BASE", base), ("NEW", new)):
        rt = [r for r in d.values() if r["verdict"] == "runtime_error"]
        fenced = [r for r in rt if (r.get("error") or {}).get("fenced")]
        plain = [r for r in rt if not (r.get("error") or {}).get("fenced")]
        for label, rs in (("fenced", fenced), ("faulted", plain)):
            if rs:
                print("%-4s runtime_error %-7s n=%-3d wall_ms %s; gpu_active_ms %s" % (
                    name, label, len(rs), fmt([r["wall_ms"] for r in rs if r.get("wall_ms") is not None]),
                    fmt([r["gpu_active_ms"] for r in rs if r.get("gpu_active_ms") is not None])))
    diff = [(i, base[i]["verdict"], new[i]["verdict"]) for i in both if base[i]["verdict"] != new[i]["verdict"]]
    print("verdicts that differ: %d%s" % (len(diff), "".join("\n  #%s %s -> %s" % d for d in diff[:20])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
