#!/usr/bin/python3
"""
bench/compile/headers.py - what the standard header shims and the prelude
cost a compile, and what they make compile, measured on kevald-compile
itself (the child protocol, no server).

    bench/compile/headers.py --old OLD/kevald-compile --new NEW/kevald-compile
                             [--rounds R] [--fence] [--out FILE]

Starts both workers (--no-sandbox: the sandbox is the same in both and
costs nothing per compile), then for R rounds sends every source of the
task library (tasks/**/*.cu, without the *.example.cu drafts) and of the
header corpus (tests/compile/corpus/*.cu) to each, alternating old and new
per source, each source made unique per round and worker (a comment) so
nothing could be reused. Prints, per set, how many compile with each
worker, and the median of the workers' own compile_ms over the sources
that compile with both, with the new/old ratio per round.
"""
import argparse
import glob
import json
import os
import statistics
import struct
import subprocess
import sys

MAGIC = 0x3146564B
HELLO, JOB, RESULT = 1, 2, 3


def read_exact(f, n):
    b = b""
    while len(b) < n:
        c = f.read(n - len(b))
        if not c:
            raise EOFError("worker closed its output")
        b += c
    return b


def read_frame(f):
    magic, typ, jl, bl = struct.unpack("<IIII", read_exact(f, 16))
    assert magic == MAGIC, "bad magic"
    j = json.loads(read_exact(f, jl)) if jl else None
    read_exact(f, bl)
    return typ, j


class Worker:
    def __init__(self, exe):
        env = dict(os.environ, KEVALD_LOG_LEVEL="error")
        self.p = subprocess.Popen([exe, "--no-sandbox"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env)
        typ, self.hello = read_frame(self.p.stdout)
        assert typ == HELLO, typ
        self.n = 0

    def compile(self, src, fence):
        self.n += 1
        js = json.dumps({"id": self.n, "fence": fence}).encode()
        blob = src.encode()
        self.p.stdin.write(struct.pack("<IIII", MAGIC, JOB, len(js), len(blob)) + js + blob)
        self.p.stdin.flush()
        typ, res = read_frame(self.p.stdout)
        assert typ == RESULT and res["id"] == self.n, (typ, res)
        return res

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fence", action="store_true", help="ask for the fenced build too")
    ap.add_argument("--out")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sets = {
        "tasks": sorted(f for f in glob.glob(os.path.join(root, "tasks/**/*.cu"), recursive=True)
                        if not f.endswith(".example.cu")),
        "corpus": sorted(glob.glob(os.path.join(root, "tests/compile/corpus/*.cu"))),
    }
    old, new = Worker(a.old), Worker(a.new)
    report = {}
    for name, files in sets.items():
        srcs = [open(f).read() for f in files]
        ok = {"old": [False] * len(srcs), "new": [False] * len(srcs)}
        ms = {"old": [[] for _ in srcs], "new": [[] for _ in srcs]}
        ratios = []
        for r in range(a.rounds):
            for i, s in enumerate(srcs):
                for tag, w in (("old", old), ("new", new)) if (r + i) % 2 == 0 else (("new", new), ("old", old)):
                    res = w.compile("%s\n// round %d %s\n" % (s, r, tag), a.fence)
                    ok[tag][i] = bool(res["ok"])
                    ms[tag][i].append(res["compile_ms"])
            both = [i for i in range(len(srcs)) if ok["old"][i] and ok["new"][i]]
            if both:
                mo = statistics.median(ms["old"][i][r] for i in both)
                mn = statistics.median(ms["new"][i][r] for i in both)
                ratios.append(mn / mo)
        both = [i for i in range(len(srcs)) if ok["old"][i] and ok["new"][i]]
        rep = {
            "sources": len(srcs),
            "compile_old": sum(ok["old"]),
            "compile_new": sum(ok["new"]),
            "both": len(both),
            "median_ms_old": statistics.median(statistics.median(ms["old"][i]) for i in both) if both else None,
            "median_ms_new": statistics.median(statistics.median(ms["new"][i]) for i in both) if both else None,
            "ratio_per_round": [round(x, 3) for x in ratios],
            "new_only": [os.path.basename(files[i]) for i in range(len(srcs)) if ok["new"][i] and not ok["old"][i]][:200],
            "old_only": [os.path.basename(files[i]) for i in range(len(srcs)) if ok["old"][i] and not ok["new"][i]],
        }
        report[name] = rep
        print("%s: %d sources; compile: old %d, new %d; median compile_ms over the %d both compile: "
              "old %s, new %s; new/old per round %s" % (
                  name, rep["sources"], rep["compile_old"], rep["compile_new"], rep["both"],
                  rep["median_ms_old"], rep["median_ms_new"], rep["ratio_per_round"]))
        if rep["old_only"]:
            print("  compile with old only:", " ".join(rep["old_only"]))
    old.close()
    new.close()
    if a.out:
        json.dump(report, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
