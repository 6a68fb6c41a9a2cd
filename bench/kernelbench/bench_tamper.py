#!/usr/bin/env python3
"""
The cost of the run role's tamper check (worker/torch/kevald_torch/judge.py),
which runs after every candidate call and before every reference call, on
real PyTorch objects on the CPU (no GPU call: the judge's synchronize is a
no-op here): Judge.tamper_check() (the modes and defaults of _STATE, the
namespaces' callables, every watched class through its MRO) against the check
it replaced (the callables of the 23 namespaces and 3 classes, each owner's
own vars() only), alternated in one process; and _snapshot() (once, at the
worker's start-up); then the check once nn.Module gained a name (copy's
__slotnames__, which shadows nothing). Prints medians of --repeats rounds of --n calls.

usage: /usr/bin/python3 bench/kernelbench/bench_tamper.py [--n 300] [--repeats 9]
(a python3 with torch: Debian's python3-torch is /usr/bin/python3)
"""
import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "worker" / "torch"))

from kevald_torch import judge  # noqa: E402


def per_call_ms(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) * 1e3 / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    judge._sync = lambda: None
    j = judge.Judge.__new__(judge.Judge)
    j.snapshot, j.state, j.tampered = judge._snapshot(judge._watched_owners()), judge._state(), False
    before = [(o, {k: v for k, v in vars(o).items() if callable(v)}) for o in judge._watched_owners()[:23]]

    def old_check():
        for o, members in before:
            cur = vars(o)
            for k, v in members.items():
                if cur.get(k, v) is not v or k not in cur:
                    return k
        return None

    old, new, snap = [], [], []
    for _ in range(a.repeats):
        old.append(per_call_ms(old_check, a.n))
        new.append(per_call_ms(lambda: j.tamper_check(True), a.n))
        t = time.perf_counter()
        judge._snapshot(judge._watched_owners())
        snap.append((time.perf_counter() - t) * 1e3)
    # a name Python adds to nn.Module (copy's __slotnames__): every class goes the slow way once
    copy.deepcopy(judge.torch.nn.Module())
    first = per_call_ms(lambda: j.tamper_check(True), 1)
    after = statistics.median(per_call_ms(lambda: j.tamper_check(True), a.n) for _ in range(a.repeats))
    s = j.snapshot
    print(f"torch {judge.torch.__version__}, python {sys.version.split()[0]}: {len(s.classes)} classes "
          f"({len(s.dicts)} distinct in their MROs), {len(s.modules)} namespaces, {len(j.state)} state reads")
    print(f"tamper_check {statistics.median(new):.3f} ms a call (old check {statistics.median(old):.3f} ms); "
          f"snapshot {statistics.median(snap):.2f} ms (medians of {a.repeats})")
    print(f"after nn.Module gained __slotnames__: the first check {first:.2f} ms, then {after:.3f} ms a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
