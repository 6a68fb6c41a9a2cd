#!/usr/bin/env python3
"""test_crosscheck - the pure parts of tools/baselines/crosscheck.py, on any
machine (no torch, no GPU): the input pool size, the baseline file's entry
(missing, stale, failed), the subtraction of the flush, the 5 % rule, the
table, the default task list against the library and the PyTorch ops, and,
with stand-ins for torch and torch.utils.benchmark, that measure() flushes in
both statements, never hands the same input set to two consecutive runs and
returns the difference of the two medians.

Usage: python3 tools/baselines/test_crosscheck.py   (also `meson test baselines-crosscheck`)
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import crosscheck as cc  # noqa: E402  (imports torch only in main())
sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
from taskfiles import task_paths  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what)


def task(name="l1_23_softmax"):
    return {"name": name, "shapes": [{"name": "default", "B": 4096, "D": 393216},
                                     {"name": "tiny", "B": 5, "D": 33}]}


def test_pool():
    gib = 1 << 30
    expect(cc.pool_size(6 * gib, 24 * gib) == 4, "6 GiB sets in 24 GiB: 4")
    expect(cc.pool_size(16 * gib, 24 * gib) == 2, "never fewer than 2 sets")
    expect(cc.pool_size(1000, 24 * gib) == 8, "never more than 8 sets")


def test_entry():
    t = task()
    ok = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 4096, "D": 393216}, "eager_ms": 6.1}}}}
    expect(cc.file_entry(ok, t) == (6.1, None), "entry at the default params")
    ms, why = cc.file_entry({"tasks": {}}, t)
    expect(ms is None and "no entry" in why, "missing entry")
    stale = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 1, "D": 2}, "eager_ms": 6.1}}}}
    ms, why = cc.file_entry(stale, t)
    expect(ms is None and "stale" in why, "stale entry")
    failed = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 4096, "D": 393216},
                                                      "eager_ms": None, "eager_error": "OOM"}}}}
    ms, why = cc.file_entry(failed, t)
    expect(ms is None and "OOM" in why, "failed entry says why")


def test_compare_and_table():
    expect(abs(cc.net_ms(0.0065, 0.0004) - 6.1) < 1e-9, "net = with - flush alone, in ms")
    d, ok = cc.compare(6.3, 6.0)
    expect(ok and abs(d - 0.05) < 1e-9, "exactly +5 % agrees")
    d, ok = cc.compare(6.31, 6.0)
    expect(not ok, "+5.2 % differs")
    d, ok = cc.compare(5.69, 6.0)
    expect(not ok, "-5.2 % differs")
    expect(cc.compare(None, 6.0) == (None, False), "no measurement: not ok")
    rows = [cc.row("a", 6.0, 6.1, 0.1, 0.05), cc.row("b", 6.0, 7.0, 0.1, 0.05),
            cc.row("c", None, None, None, 0.05, "stale entry")]
    expect([r["ok"] for r in rows] == [True, False, False], "row verdicts")
    text = cc.table(rows)
    expect("| a | 6 | 6.1 | 0.1 | +1.7 % | yes |" in text, "table row a: %s" % text)
    expect("**NO** (stale entry)" in text and "1 of 3 tasks within 5 %" in text, "table: %s" % text)


def test_default_tasks():
    expect(len(cc.DEFAULT_TASKS) == 10 and len(set(cc.DEFAULT_TASKS)) == 10, "ten distinct tasks")
    names = set()
    for p in task_paths(os.path.join(ROOT, "tasks")):
        with open(p) as f:
            names.add(json.load(f).get("name"))
    ops = ""
    for p in glob.glob(os.path.join(ROOT, "tools", "oracle", "torch_ops*.py")):
        with open(p) as f:
            ops += f.read()
    for n in cc.DEFAULT_TASKS:
        expect(n in names, "%s is a task of the library" % n)
        expect('"%s"' % n in ops, "%s has a PyTorch expression" % n)
        expect("conv" not in n, "%s is not a convolution" % n)


class FakeTensor:
    def __init__(self, tag):
        self.tag = tag

    def numel(self):
        return 1 << 20

    def element_size(self):
        return 4


class FakeCommon:
    def gen_inputs(self, task, params, seed):
        return {"x": FakeTensor(seed)}


class FakeTorch:
    class cuda:  # noqa: N801 - mirrors torch.cuda
        @staticmethod
        def synchronize():
            pass


class FakeFlushBuf:
    def __init__(self, log):
        self.log = log

    def sum(self):
        self.log.append("flush")


class FakeBenchmark:
    """torch.utils.benchmark stand-in: runs the statement 5 times; the median
    is 4 ms with fn in the statement, 1 ms without."""
    def __init__(self, log):
        self.log = log
        outer = self

        class Timer:
            def __init__(self, stmt, globals):  # noqa: A002 - the real API's name
                self.stmt, self.g = stmt, globals

            def blocked_autorange(self, min_run_time):
                outer.log.append(("timer", self.stmt, min_run_time))
                for _ in range(5):
                    exec(self.stmt, dict(self.g))  # noqa: S102 - the statement under test

                class M:
                    median = 0.004 if "fn(" in self.stmt else 0.001
                return M()
        self.Timer = Timer


def test_measure():
    log = []
    seen = []

    def fn(ins):
        seen.append(ins["x"].tag)
        log.append("fn")

    ms, flush_ms = cc.measure(FakeTorch, FakeBenchmark(log), FakeCommon(), fn, task(),
                              {"B": 1, "D": 1}, 3 * (4 << 20), 0.5, FakeFlushBuf(log))
    expect(abs(ms - 3.0) < 1e-9 and abs(flush_ms - 1.0) < 1e-9, "ms = 4 - 1, flush 1: %r" % ((ms, flush_ms),))
    timers = [e for e in log if isinstance(e, tuple)]
    expect(len(timers) == 2 and all("flush()" in t[1] for t in timers), "both statements flush")
    expect(all(t[2] == 0.5 for t in timers), "min_run_time passed on")
    expect(len(set(seen)) == 3, "a pool of 3 sets used: %r" % seen)
    expect(all(a != b for a, b in zip(seen, seen[1:])), "consecutive runs never share a set: %r" % seen)
    i = log.index(timers[0])
    body = [e for e in log[i + 1:] if not isinstance(e, tuple)][:10]
    expect(body[:4] == ["flush", "fn", "flush", "fn"], "flush before every run: %r" % body)


def main():
    for fn in (test_pool, test_entry, test_compare_and_table, test_default_tasks, test_measure):
        fn()
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
