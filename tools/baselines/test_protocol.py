#!/usr/bin/env python3
"""test_protocol - the baseline tool's pure parts, on any machine (no torch, no GPU).

Usage: python3 tools/baselines/test_protocol.py   (also `meson test baselines-protocol`)

Checks that the GPU slug is common/baselines.c's (the same cases as
common/test-baselines.c), that the statistic and the stopping and
launches-per-trial rules are worker/gpu/timing.c's and worker/gpu/judge_timing.c's, task
selection by glob, the run budget, the file format (what common/baselines.c
requires, failures with their reason, a resumed run keeping only figures of
the same GPU model and params), that the library walk skips baselines/ and
example plans, and, with a stand-in for torch, that Timer.time() follows the
protocol: every execution on its own fresh inputs, a flush before every
trial and only then the start event, L executions a trial, the median of
trial / L. Exit status 1 on any failure.
"""
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import baselines  # noqa: E402  (imports torch only in main())
import protocol  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def test_slug():
    for name, want in [("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
                       ("  NVIDIA  H200 (NVL) ", "nvidia-h200-nvl"),
                       ("NVIDIA H100 PCIe", "nvidia-h100-pcie"), ("", ""), (None, ""),
                       ("Fake GPU (kevald tests)", "fake-gpu-kevald-tests")]:
        check(protocol.slug(name) == want, "slug(%r) = %r, want %r" % (name, protocol.slug(name), want))


def test_stats():
    check(protocol.ci_ranks(6) == (0, 5), "ci_ranks(6) %r" % (protocol.ci_ranks(6),))
    check(protocol.ci_ranks(100) == (39, 60), "ci_ranks(100) %r" % (protocol.ci_ranks(100),))
    st = protocol.stats([5, 1, 4, 2, 3])
    check(st["median_ms"] == 3 and st["min_ms"] == 1 and st["max_ms"] == 5 and st["trials"] == 5, st)
    check(abs(st["precision"] - (5 - 1) / 2 / 3) < 1e-12, "precision %r" % st["precision"])
    check(protocol.stats([1, 2, 3, 4])["median_ms"] == 2.5, "even median")
    check(math.isinf(protocol.stats([1, 1])["precision"]), "precision below 3 samples is infinite")
    pol = dict(protocol.POLICY)
    check(protocol.should_stop(pol, 1000, 0, 1.0) == "max_trials", "max_trials")
    check(protocol.should_stop(pol, 6, 10, 0.005) == "precision", "precision at min_trials")
    check(protocol.should_stop(pol, 5, 10, 0.0) is None, "never before min_trials by precision")
    check(protocol.should_stop(pol, 3, 2000, 1.0) == "budget", "budget after 3")
    check(protocol.should_stop(pol, 2, 5000, 1.0) is None, "not on budget below 3")
    check(protocol.should_stop(pol, 50, 100, 0.02) is None, "go on")


def test_launches():
    lp = protocol.launches_per_trial
    check(lp(0.006, 1000) == 32, "capped at 32: %d" % lp(0.006, 1000))
    check(lp(0.1, 1000) == 10, "1 ms trial: %d" % lp(0.1, 1000))
    check(lp(2.0, 1000) == 1, "a long kernel keeps 1")
    check(lp(0.0, 1000) == 1 and lp(float("nan"), 1000) == 1, "unknown time: 1")
    check(lp(0.01, 100 << 20) == 10, "1 GiB of input sets: %d" % lp(0.01, 100 << 20))
    # ~0.2 ms trials at 5 %: 0.01 * 0.01 / 0.05 is 0.19999999999999998 in C's doubles too
    check(lp(0.05, 1000) == 20 and lp(0.05, 1000, 0.05) == 3, "coarser target: %d" % lp(0.05, 1000, 0.05))


def test_select_and_budget():
    names = ["l1_23_softmax", "l1_24_logsoftmax", "l2_1_conv", "l1_19_relu"]
    check(protocol.select_tasks(names, None) == sorted(names), "all")
    check(protocol.select_tasks(names, "l1_2*") == ["l1_23_softmax", "l1_24_logsoftmax"], "glob")
    check(protocol.select_tasks(names, "l2_*, l1_19_relu") == ["l1_19_relu", "l2_1_conv"], "comma list")
    check(protocol.select_tasks(names, "nothing*") == [], "no match")
    now = [100.0]
    b = protocol.Budget(60, lambda: now[0])
    check(b.fits(60) and not b.fits(61), "budget at start")
    now[0] = 150.0
    check(b.fits(10) and not b.fits(10.5) and abs(b.left() - 10) < 1e-9, "budget after 50 s")
    check(protocol.Budget(None, lambda: 0).fits(1e9), "no budget: everything fits")


def test_format():
    doc = protocol.new_doc("NVIDIA H100 80GB HBM3", {"torch": "2.11.0", "cuda": "12.8", "driver": "580.95.05"},
                           protocol.POLICY, date="2026-11-27T06:00:00Z")
    check(doc["format"] == 1 and doc["gpu"] == "NVIDIA H100 80GB HBM3" and doc["slug"] == "nvidia-h100-80gb-hbm3",
          "header %r" % doc)
    check(doc["torch"] == "2.11.0" and doc["triton"] is None and doc["date"] == "2026-11-27T06:00:00Z", "versions")
    check(doc["protocol"]["statistic"] == "median" and doc["protocol"]["inputs"] == "fresh per run", "protocol")
    p = {"B": 16, "D": 16384}
    protocol.set_result(doc, "l1_23_softmax", "default", p, "eager", 6.12, detail={"median_ms": 6.12, "trials": 40})
    protocol.set_result(doc, "l1_23_softmax", "default", p, "compile", None, "RuntimeError: boom")
    e = doc["tasks"]["l1_23_softmax"]["default"]
    check(e["params"] == p and e["eager_ms"] == 6.12 and e["eager"] == {"trials": 40}, "eager entry %r" % e)
    check("eager_error" not in e, "a figure has no error")
    check(e["compile_ms"] is None and e["compile_error"] == "RuntimeError: boom", "compile failure %r" % e)
    protocol.set_result(doc, "l1_23_softmax", "tiny", {"B": 3, "D": 33}, "eager", 0.002,
                        detail={"median_ms": 0.002, "precision": float("inf"), "trials": 2})
    check(doc["tasks"]["l1_23_softmax"]["tiny"]["eager"] == {"precision": None, "trials": 2}, "no Infinity")
    protocol.set_result(doc, "l1_23_softmax", "small", {"B": 7, "D": 1000}, "eager", float("nan"), None)
    check(doc["tasks"]["l1_23_softmax"]["small"]["eager_ms"] is None and
          doc["tasks"]["l1_23_softmax"]["small"]["eager_error"], "NaN is no figure")
    try:
        protocol.set_result(doc, "t", "s", {}, "eager", None, None)
        check(False, "a missing figure without a reason is refused")
    except ValueError:
        pass
    check(protocol.measured(doc, "l1_23_softmax", "default", "eager", p), "measured")
    check(not protocol.measured(doc, "l1_23_softmax", "default", "compile", p), "failed is not measured")
    check(not protocol.measured(doc, "l1_23_softmax", "default", "eager", {"B": 8, "D": 16384}),
          "other params are not measured")
    # re-measured at other params: the entry starts afresh (no stale eager figure beside a new compile one)
    protocol.set_result(doc, "l1_23_softmax", "default", {"B": 8, "D": 16384}, "compile", 1.0)
    e = doc["tasks"]["l1_23_softmax"]["default"]
    check(e["eager_ms"] is None and e["eager_error"] == "not run" and e["compile_ms"] == 1.0, "afresh %r" % e)
    check(protocol.summary(doc) == {"entries": 3, "eager": 1, "compile": 1}, protocol.summary(doc))
    check(protocol.resume(doc, "nvidia h100 80gb hbm3") is doc["tasks"], "resume: same slug")
    check(protocol.resume(doc, "NVIDIA H200") == {}, "resume: another GPU model")
    check(protocol.resume(dict(doc, format=2), "NVIDIA H100 80GB HBM3") == {}, "resume: another format")
    check(protocol.resume(None, "NVIDIA H100 80GB HBM3") == {}, "resume: nothing")
    json.loads(json.dumps(doc, allow_nan=False))   # plain JSON: no NaN or Infinity in the file


def test_library_walk():
    with tempfile.TemporaryDirectory() as root:
        for rel, text in [("a/t1.json", {"name": "t1"}), ("t2.json", {"name": "t2"}),
                          ("a/t1.plan.json", []), ("baselines/nvidia-h100.json", {"gpu": "x"}),
                          ("a/baselines/t3.json", {"name": "t3"})]:
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                json.dump(text, f)
        check(sorted(baselines.load_library(root)) == ["t1", "t2", "t3"], "library walk %r" %
              sorted(baselines.load_library(root)))
        # the real library: every task file is a task, whatever baselines/ holds
        lib = baselines.load_library(os.path.join(HERE, "..", "..", "tasks"))
        check(len(lib) >= 100 and all("shapes" in t for t in lib.values()), "the task library: %d" % len(lib))


class FakeTorch:
    """Enough of torch for Timer: events read a clock that fn advances; a log of what ran in which order."""

    class _Obj:
        pass

    def __init__(self):
        self.now = 0.0
        self.log = []
        torch = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self):
                self.t = torch.now
                torch.log.append(("record",))

            def elapsed_time(self, end):
                return end.t - self.t

        class Flush:
            def fill_(self, v):
                return self

            def sum(self):
                torch.log.append(("flush",))

        self.cuda = self._Obj()
        self.cuda.Event = Event
        self.cuda.synchronize = lambda: None
        props = self._Obj()
        props.L2_cache_size = 50 << 20
        self.cuda.get_device_properties = lambda i: props
        self.float32 = "f32"
        self.empty = lambda n, dtype=None, device=None: Flush()


class FakeTensor:
    def __init__(self, seed):
        self.seed = seed

    def numel(self):
        return 1000

    def element_size(self):
        return 4


def test_timer():
    torch = FakeTorch()
    common = FakeTorch._Obj()
    common.gen_inputs = lambda task, params, seed: {"x": FakeTensor(seed)}
    seen = []

    def fn(ins):
        seen.append(ins["x"].seed)
        torch.log.append(("run", ins["x"].seed))
        torch.now += 0.01          # a 10 µs kernel

    t = baselines.Timer(torch, common, dict(protocol.POLICY))
    st = t.time(fn, {"name": "t"}, {"N": 1})
    check(len(seen) == len(set(seen)), "every execution on its own fresh inputs")
    check(st["launches_per_trial"] == 32, "10 us: 32 executions a trial (%r)" % st["launches_per_trial"])
    check(abs(st["median_ms"] - 0.01) < 1e-9, "median of trial / L: %r" % st["median_ms"])
    check(st["stop"] == "precision" and st["trials"] == protocol.POLICY["min_trials"], "stops at min_trials: %r" % st)
    check(len(seen) == protocol.POLICY["warmup"] + 32 * st["trials"], "warm-up + L x trials: %d" % len(seen))
    # every trial: flush, start event, the runs, end event
    log, i, trials = torch.log, 0, 0
    while i < len(log):
        check(log[i] == ("flush",) and log[i + 1] == ("record",), "flush then the start event at %d" % i)
        j = i + 2
        while log[j][0] == "run":
            j += 1
        check(log[j] == ("record",), "the end event after the runs at %d" % j)
        i, trials = j + 1, trials + 1
    check(trials == protocol.POLICY["warmup"] + st["trials"], "%d trials" % trials)


def fake_modules(torch):
    """torch, common and torch_ops stand-ins for baselines.main(): t_ok runs, t_fail raises, t_none has no op."""
    import types
    torch.__version__ = "2.99.0+fake"
    torch.version = types.SimpleNamespace(cuda="12.8")
    torch.cuda.get_device_name = lambda i: "Fake GPU (kevald tests)"
    torch._dynamo = types.SimpleNamespace(reset=lambda: torch.log.append(("dynamo_reset",)))

    def compile_(fn, mode=None, dynamic=None):
        torch.log.append(("compile", mode, dynamic))
        return lambda ins: fn(ins)
    torch.compile = compile_
    common = types.ModuleType("common")
    common.fp32_strict = lambda: None
    common.gen_inputs = lambda task, params, seed: {"x": FakeTensor(seed)}
    common.empty_cache = lambda: None
    ops = types.ModuleType("torch_ops")

    def ok(ins, P):
        torch.now += 0.05 * P["N"]
        return {}

    def fail(ins, P):
        raise RuntimeError("no kernel image is available\nmore")
    ops.OPS = {"t_ok": ok, "t_fail": fail}
    return {"torch": torch, "common": common, "torch_ops": ops}


def test_main():
    """baselines.main() end to end with stand-ins: the file it writes, failures and skips with reasons."""
    torch = FakeTorch()
    mods = fake_modules(torch)
    saved = {k: sys.modules.get(k) for k in mods}
    argv, env_out = sys.argv, os.environ.get("OUT")
    sys.modules.update(mods)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lib, out = os.path.join(tmp, "tasks"), os.path.join(tmp, "out")
            os.makedirs(os.path.join(lib, "baselines"))
            for name in ("t_ok", "t_fail", "t_none", "u_other"):
                with open(os.path.join(lib, name + ".json"), "w") as f:
                    json.dump({"name": name, "shapes": [{"name": "default", "N": 2}, {"name": "small", "N": 1}]}, f)
            with open(os.path.join(lib, "baselines", "other.json"), "w") as f:
                f.write("not a task")
            os.environ["OUT"] = out
            sys.argv = ["baselines.py", "--library", lib, "--tasks", "t_*", "--compile-shapes", "default"]
            rc = baselines.main()
            check(rc == 0, "main() exit status %r" % rc)
            path = os.path.join(out, "fake-gpu-kevald-tests.json")
            with open(path) as f:
                doc = json.load(f)   # plain JSON (json.load would take NaN; the file must not hold any)
            check(doc["gpu"] == "Fake GPU (kevald tests)" and doc["torch"] == "2.99.0+fake" and doc["cuda"] == "12.8"
                  and doc["format"] == 1 and doc["protocol"]["compile_mode"] == "default", "header %r" % doc)
            check(sorted(doc["tasks"]) == ["t_fail", "t_none", "t_ok"], "--tasks t_*: %r" % sorted(doc["tasks"]))
            ok = doc["tasks"]["t_ok"]
            check(abs(ok["default"]["eager_ms"] - 0.1) < 1e-9 and abs(ok["small"]["eager_ms"] - 0.05) < 1e-9,
                  "t_ok eager %r" % ok)
            check(ok["default"]["params"] == {"N": 2} and ok["default"]["eager"]["stop"] == "precision", ok)
            check(abs(ok["default"]["compile_ms"] - 0.1) < 1e-9, "t_ok compile %r" % ok["default"])
            check(ok["small"]["compile_ms"] is None and "--compile-shapes" in ok["small"]["compile_error"], ok)
            fail = doc["tasks"]["t_fail"]["default"]
            check(fail["eager_ms"] is None and fail["eager_error"] == "RuntimeError: no kernel image is available",
                  "t_fail %r" % fail)
            check("no PyTorch expression" in doc["tasks"]["t_none"]["default"]["eager_error"], "t_none")
            check(("compile", "default", False) in torch.log, "torch.compile(mode=default, dynamic=False)")
            check(not os.path.exists(path + ".tmp"), "written atomically")
            # a resumed run with no budget keeps every figure and says why the rest was not run
            sys.argv = ["baselines.py", "--library", lib, "--tasks", "t_*", "--resume", path, "--budget-s", "0"]
            torch.log.clear()
            check(baselines.main() == 0, "resumed run")
            with open(path) as f:
                doc2 = json.load(f)
            check(doc2["tasks"]["t_ok"]["default"]["eager_ms"] == ok["default"]["eager_ms"], "figures kept")
            check("did not fit in --budget-s 0" in doc2["tasks"]["t_ok"]["small"]["compile_error"], "budget skip %r" %
                  doc2["tasks"]["t_ok"]["small"])
            check("did not fit in --budget-s 0" in doc2["tasks"]["t_fail"]["default"]["eager_error"], "retried")
            check(not any(e[0] == "record" for e in torch.log), "nothing timed without a budget")
    finally:
        sys.argv = argv
        if env_out is None:
            os.environ.pop("OUT", None)
        else:
            os.environ["OUT"] = env_out
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def main():
    for t in (test_slug, test_stats, test_launches, test_select_and_budget, test_format, test_library_walk,
              test_timer, test_main):
        t()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("baselines protocol: all tests passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
