"""
torchworker-judge: the real kevald-torch, sandboxed, driven over its pipes as
the dispatcher drives it, with a stand-in for PyTorch (faketorch/: numpy
arrays, "cuda" a label; CI has neither PyTorch nor a GPU). What it checks is
the worker's own logic end to end: start-up and HELLO of both roles, the
build role's RESULTs, the run role's judge (fresh seeded inputs, candidate
first, inputs and outputs checked, every timed run revalidated, adaptive
trials), each verdict and error kind (the tamper check: a replaced function,
a name set over an inherited one or replaced in the base class, a mode or
default left changed, each named), the RESULT against resultcheck's rules
and the schema, and the exits: 3 after a sticky CUDA error, 4 from the C
watchdog past the deadline, 0 after every other JOB (one JOB per process). Timings mean nothing here.
Skipped where no python3 has numpy.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import helpers
from kevald_torch import frames

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch")


def numpy_python():
    for py in ("/usr/bin/python3", "python3"):
        try:
            if subprocess.run([py, "-c", "import numpy"], capture_output=True, timeout=20).returncode == 0:
                return py
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


PY = numpy_python()

REF = b"""
import torch
import torch.nn as nn
batch_size = 8
dim = 32
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
"""

HEAD = b"import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def __init__(self):\n" \
       b"        super().__init__()\n        self.cache = None\n    def forward(self, x):\n"
SAMPLES = {
    "correct": HEAD + b"        e = (x - x.max(dim=1, keepdim=True)).exp()\n        return e / e.sum(dim=1, keepdim=True)\n",
    "wrong": HEAD + b"        return (x - x.max(dim=1, keepdim=True)).exp()\n",
    "caching": HEAD + b"        if self.cache is None:\n            self.cache = torch.softmax(x, 1)\n        return self.cache\n",
    "alias": HEAD + b"        return x.copy_(torch.softmax(x, 1))\n",
    "mutates": HEAD + b"        y = torch.softmax(x, 1)\n        x.zero_()\n        return y\n",
    "downcast": HEAD + b"        return torch.softmax(x.half(), 1)\n",
    "on_cpu": HEAD + b"        return torch.softmax(x, 1).cpu()\n",
    "raises": HEAD + b"        raise ValueError('not yet')\n",
    "cuda_fault": HEAD + b"        raise RuntimeError('CUDA error: an illegal memory access was encountered')\n",
    "tamper": b"import torch\ntorch.cuda.Event.elapsed_time = lambda self, end: 1e-3\n" + HEAD +
              b"        return torch.softmax(x, 1)\n",
    # turns a switch on for everyone; the reference must still run with the judge's (the stand-in's
    # softmax returns garbage when the switch is on)
    "switch": b"import torch\ntorch.backends.cudnn.allow_tf32 = True\n" + HEAD + b"        return torch.softmax(x, 1)\n",
    "hang": HEAD + b"        while True:\n            pass\n",
    # names torch.Tensor inherits (from _TensorBase, as torch's from TensorBase): set over, or replaced
    # in the base class, they change what the judge's comparisons call
    "inherited": b"import torch\ntorch.Tensor.__gt__ = lambda self, o: self != self\n" + HEAD +
                 b"        return torch.softmax(x, 1)\n",
    "base_member": b"import torch\ntorch._TensorBase.__gt__ = lambda self, o: self != self\n" + HEAD +
                   b"        return torch.softmax(x, 1)\n",
    # a mode left entered, a default changed: the reference would run with them
    "mode": b"import torch\nimport torch.overrides\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n"
            b"        super().__init__()\n        torch.overrides.TorchFunctionMode().__enter__()\n"
            b"    def forward(self, x):\n        return torch.softmax(x, 1)\n",
    "dtype": HEAD + b"        torch.set_default_dtype(torch.float64)\n        return torch.softmax(x, 1)\n",
    "grad": HEAD + b"        torch.set_grad_enabled(True)\n        return torch.softmax(x, 1)\n",
    # the same, put back before returning: correct
    "scoped": b"import torch.overrides\n" + HEAD +
              b"        with torch.no_grad(), torch.overrides.TorchFunctionMode():\n"
              b"            return torch.softmax(x, 1)\n",
    "no_model_new": b"import torch\nX = 1\n",
    # launch limits: a kernel still running after the forward returned (the stand-in's async spin); a
    # forward that hangs after its first call; a first call slow in Python (as a compile is), then fast
    "kernel_hang": HEAD + b"        torch.cuda._sleep(10 ** 15)\n        return torch.softmax(x, 1)\n",
    "hang_later": HEAD + b"        if self.cache is not None:\n            import time\n            time.sleep(1000)\n"
                         b"        self.cache = 1\n        return torch.softmax(x, 1)\n",
    # each model's first forward slow in Python (a compile, an instance's lazy set-up)
    "slow_first": HEAD + b"        if self.cache is None:\n            import time\n            time.sleep(1.6)\n"
                         b"        self.cache = 1\n        return torch.softmax(x, 1)\n",
    # the third model's first forward (the first built again for timing) leaves a kernel running
    "rebuilt_hang": b"_seen = []\n" + HEAD + b"        if self.cache is None:\n            self.cache = 1\n"
                    b"            if len(_seen) >= 2:\n                torch.cuda._sleep(10 ** 15)\n"
                    b"            _seen.append(1)\n        return torch.softmax(x, 1)\n",
    # a Tensor subclass that says every element agrees (the stand-in's arrays are .a)
    "subclass": HEAD + b"        class Liar(torch.Tensor):\n            def __ne__(self, o):\n"
                       b"                return torch.zeros(*self.shape) != 0\n"
                       b"        return Liar(x.a * 0, 'cuda')\n",
}


class Driver:
    def __init__(self, test, role, root, extra=None):
        env = dict({"KEVALD_TORCH_EXT_ROOT": root, "PYTHONPATH": FAKE, "KEVALD_GPU_INDEX": "0"}, **(extra or {}))
        self.p = helpers.start(role, env)
        fr = helpers.read_frame(self.p)
        test.assertIsNotNone(fr, "no HELLO")
        self.hello = fr[1]

    def job(self, obj, blob=b""):
        self.p.stdin.write(frames.pack(frames.JOB, obj, blob))
        self.p.stdin.flush()
        fr = helpers.read_frame(self.p)
        return fr[1] if fr else None


# A reference whose second call takes 1.2 s (its first, which the launch limits come from, is fast):
# the limit a candidate's forward armed must not outlive that forward.
REF_SLOW_ONCE = REF.replace(b"    def forward(self, x):\n",
                            b"    def forward(self, x):\n        _calls.append(1)\n        if len(_calls) == 2:\n"
                            b"            import time\n            time.sleep(1.2)\n").replace(
                            b"batch_size = 8\n", b"_calls = []\nbatch_size = 8\n")


def run_job(jid, sample, deadline_ms=20000, shapes=None, launch=None, ref=REF):
    src = SAMPLES[sample]
    return dict(launch or {}, **{"id": jid, "kind": "run", "seed": "%016x" % (0x1234 + jid), "mode": "full", "deadline_ms": deadline_ms,
            "timing": {"budget_ms": 200, "target_precision": 0.5, "min_trials": 4, "max_trials": 12, "warmup": 1},
            "correctness_trials": 2, "build_dir": "/nonexistent",
            "sources": {"candidate": {"offset": 0, "size": len(src)},
                        "reference": {"offset": len(src), "size": len(ref)}},
            "shapes": shapes or [{"name": "default", "constants": {"batch_size": 8, "dim": 32}, "atol": 1e-4,
                                  "rtol": 1e-4},
                                 {"name": "small", "constants": {"batch_size": 3, "dim": 5}, "atol": 1e-4,
                                  "rtol": 1e-4}]}), src + ref


@unittest.skipIf(PY is None, "no python3 with numpy here")
@unittest.skipUnless(PY and helpers.lib_loads(PY), "libkevald-confine.so cannot be loaded into Python here")
class FakeJudge(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="kevald-torch-fake-")
        os.chmod(cls.root, 0o777)

    def start(self, role, extra=None):
        helpers.PYTHON = PY   # the worker runs on the python that has numpy
        try:
            return Driver(self, role, self.root, extra)
        finally:
            helpers.PYTHON = None

    def finish(self, d):
        return helpers.finish(d.p)

    def one_job(self, role, job, blob, status=0):
        """The RESULT of @job on a fresh worker of @role, which must say "exiting": true and then
        exit @status without reading another JOB (one JOB per process, issue 29)."""
        d = self.start(role)
        self.assertTrue(d.hello["ok"], d.hello)
        res = d.job(job, blob)
        self.assertIsNotNone(res, f"job {job['id']}: no RESULT")
        self.assertIs(res["exiting"], True, res)
        rc, err = self.finish(d)
        self.assertEqual(rc, status, err)
        return res, d.hello["pid"]

    def test_run_role(self):
        from test_result import resultcheck, schema_errors
        d = self.start("run")
        h = d.hello
        self.assertTrue(h["ok"], h)
        self.assertEqual((h["role"], h["device"], h["arch"], h["torch"]), ("torch-run", 0, "sm_90a", "0.0-fake"))
        self.assertTrue(h["layers"]["seccomp"]["active"], h["layers"])
        self.assertIn("torch-run allowlist", h["layers"]["seccomp"]["detail"])
        # how its start-up went, step by step, in order (the dispatcher logs it with the HELLO)
        steps = h["startup_ms"]
        self.assertEqual(list(steps), ["python", "env", "sandbox", "import", "cuda", "handler", "lock"], steps)
        self.assertTrue(all(isinstance(v, float) and 0 <= v < 60000 for v in steps.values()), steps)
        self.assertGreater(steps["python"], 0, steps)   # the interpreter's own start is counted
        rc, err = self.finish(d)   # end of input before any JOB: exit 0
        self.assertEqual(rc, 0, err)
        pids = set()
        want = {"correct": ("correct", None), "wrong": ("incorrect", "mismatch"),
                "caching": ("incorrect", "mismatch"), "alias": ("incorrect", "output_alias"),
                "mutates": ("incorrect", "input_mutation"), "downcast": ("incorrect", "precision"),
                "on_cpu": ("incorrect", "output_device"), "raises": ("runtime_error", "python"),
                "no_model_new": ("rejected", "no_model_new"), "subclass": ("incorrect", "output_type"),
                "switch": ("incorrect", "mismatch")}
        for i, (name, (verdict, kind)) in enumerate(want.items()):
            with self.subTest(name):
                job, blob = run_job(100 + i, name)
                res, pid = self.one_job("run", job, blob)
                pids.add(pid)
                self.assertEqual(res["id"], 100 + i)
                self.assertEqual((res["verdict"], (res["error"] or {}).get("kind")), (verdict, kind),
                                 json.dumps(res)[:600])
                self.assertEqual(schema_errors(res), [])
                resultcheck(res, job["deadline_ms"])
                if name == "correct":
                    t = res["timing"]
                    self.assertEqual([s["shape"] for s in t["shapes"]], ["default", "small"])
                    for s in t["shapes"]:
                        # at least min_trials to stop on precision; the budget needs 3
                        self.assertGreaterEqual(s["candidate"]["trials"], 4 if s["stop"] == "precision" else 3)
                        self.assertEqual(s["runs_checked"], s["candidate"]["trials"] + 1)   # + the warm-up pair
                        self.assertIn(s["stop"], ("precision", "budget", "max_trials", "too_slow"))
                    c = res["correctness"]["shapes"]
                    self.assertTrue(all(x["passed"] and x["inputs_intact"] and x["deterministic"] and
                                        x["revalidated"] and x["trials"] == 2 for x in c), c)
                    self.assertEqual(c[0]["buffers"][0]["count"], 8 * 32)
                    self.assertEqual(set(res["phases_ms"]), {"load", "correctness", "timing", "cleanup"})
                if name == "caching":   # right on trial 0's inputs, wrong on trial 1's
                    self.assertEqual(res["error"]["trial"], 1)
                    self.assertEqual(res["correctness"]["shapes"][0]["buffers"][0]["mismatches"], 8 * 32)
        self.assertEqual(len(pids), len(want))   # a process of its own for every JOB
        # a sticky CUDA error: answered, then the worker exits 3
        job, blob = run_job(200, "cuda_fault")
        res, _ = self.one_job("run", job, blob, status=3)
        self.assertEqual((res["verdict"], res["error"]["kind"], res["error"]["name"], res["error"]["sticky"]),
                         ("runtime_error", "cuda", "CUDA_ERROR_ILLEGAL_ADDRESS", True))

    def test_what_a_candidate_patches_ends_with_its_job(self):
        """A JOB sent after the first one is never run: the worker has exited (issue 29), so what the
        candidate changed and the tamper check does not see (here a new body in torch.softmax itself:
        the same function object) cannot reach the next candidate, which a fresh worker judges right."""
        patch = b"import torch\ntorch.softmax.__code__ = (lambda x, dim: x).__code__\n"
        d = self.start("run")
        job, blob = run_job(400, "correct")
        blob = patch + blob
        job["sources"] = {"candidate": {"offset": 0, "size": len(SAMPLES["correct"]) + len(patch)},
                          "reference": {"offset": len(SAMPLES["correct"]) + len(patch), "size": len(REF)}}
        res = d.job(job, blob)
        self.assertIs(res["exiting"], True, res)
        job, blob = run_job(401, "wrong")
        try:
            self.assertIsNone(d.job(job, blob))   # no RESULT: the worker is gone
        except BrokenPipeError:
            pass
        rc, err = self.finish(d)
        self.assertEqual(rc, 0, err)
        res, _ = self.one_job("run", job, blob)
        self.assertEqual((res["verdict"], res["error"]["kind"]), ("incorrect", "mismatch"), res)

    def test_tamper_and_timeout(self):
        job, blob = run_job(300, "tamper")
        res, _ = self.one_job("run", job, blob)
        self.assertEqual((res["verdict"], res["error"]["kind"]), ("rejected", "tamper"), res)
        self.assertIn("Event.elapsed_time", res["error"]["message"])
        # what is named: an inherited name set over or replaced in the base class; a mode or default
        # left changed (forward runs under no_grad: grad mode is compared with that, not start-up's)
        want = {"inherited": ("load", "replaced Tensor.__gt__,"), "base_member": ("load", "replaced Tensor.__gt__,"),
                "mode": ("correctness", "left the TorchFunctionMode stack's depth (was 0, now 1)"),
                "dtype": ("correctness", "left the default dtype (was float32, now float64)"),
                "grad": ("correctness", "left grad mode (was False, now True)")}
        for i, (name, (phase, text)) in enumerate(want.items()):
            with self.subTest(name):
                job, blob = run_job(310 + i, name)
                res, _ = self.one_job("run", job, blob)
                self.assertEqual((res["verdict"], res["error"]["kind"], res["error"]["phase"]),
                                 ("rejected", "tamper", phase), res)
                self.assertIn(text, res["error"]["message"])
        job, blob = run_job(320, "scoped")
        res, _ = self.one_job("run", job, blob)
        self.assertEqual((res["verdict"], res["error"]), ("correct", None), res)
        d = self.start("run")
        job, blob = run_job(301, "hang", deadline_ms=1500)
        res = d.job(job, blob)
        self.assertEqual((res["id"], res["verdict"], res["error"]["kind"]), (301, "timeout", "timeout"), res)
        self.assertEqual((res["error"]["shape"], res["error"]["phase"]), ("default", "correctness"))
        self.assertIs(res["exiting"], True)
        rc, err = self.finish(d)
        self.assertEqual(rc, 4, err)

    def test_launch_limits(self):
        """The JOB's launch limits (kevald-gpu's) hold each forward, long before the deadline: a kernel
        still running after a shape set's first forward returned is a timeout at launch_timeout_ms, a
        later forward that hangs one at launch_factor x the reference's first call (at least
        judge.CALL_FLOOR_MS), a kernel left running by the first forward of a model built again for
        timing one at launch_timeout_ms; a model's first forward's own Python (a compile, a lazy set-up)
        is not held to them, nor is a slow reference call after a forward."""
        import time
        from test_result import resultcheck, schema_errors
        launch = {"launch_timeout_ms": 1500, "launch_factor": 1000, "launch_floor_ms": 100}
        cases = ((330, "kernel_hang", 1500, "correctness", "still running 1500 ms after the forward returned"),
                 (331, "hang_later", None, "correctness", "x the reference's"),
                 (334, "rebuilt_hang", 1500, "timing", "still running 1500 ms after the forward returned"))
        for jid, sample, limit, phase, text in cases:
            with self.subTest(sample):
                job, blob = run_job(jid, sample, deadline_ms=30000, launch=launch)
                t = time.monotonic()
                res, _ = self.one_job("run", job, blob, status=4)
                took = time.monotonic() - t
                e = res["error"]
                self.assertEqual((res["verdict"], e["kind"], e["shape"], e["phase"]),
                                 ("timeout", "timeout", "default", phase), res)
                if limit is None:   # 1000 x the reference's first call, at least 1000, at most 1500
                    self.assertTrue(1000 <= e["launch_limit_ms"] <= 1500, e)
                else:
                    self.assertEqual(e["launch_limit_ms"], limit, e)
                self.assertLess(took, 15.0, "the deadline, not the launch limit, ended it")
                self.assertIn(text, e["message"])
                if sample == "hang_later":
                    self.assertTrue(0 < e["reference_ms"] < 100, e)
                else:
                    self.assertNotIn("reference_ms", e)
                self.assertEqual(schema_errors(res), [])
                resultcheck(res, job["deadline_ms"])
        for jid, sample, ref in ((332, "slow_first", REF), (335, "correct", REF_SLOW_ONCE)):
            with self.subTest(sample):
                job, blob = run_job(jid, sample, deadline_ms=30000, launch=launch, ref=ref)
                res, _ = self.one_job("run", job, blob)
                self.assertEqual((res["verdict"], res["error"]), ("correct", None), res)
                # 1000 x the reference's first call, at least judge.CALL_FLOOR_MS, at most the ceiling
                self.assertTrue(all(1000 <= s["launch_limit_ms"] <= 1500 for s in res["correctness"]["shapes"]),
                                res["correctness"])
        # without launch limits in the JOB only the deadline holds a forward: no limit is reported
        job, blob = run_job(333, "correct", deadline_ms=30000)
        res, _ = self.one_job("run", job, blob)
        self.assertEqual(res["verdict"], "correct", res)
        self.assertNotIn("launch_limit_ms", res["correctness"]["shapes"][0])

    def test_bytecode_only_from_a_folder_the_workers_cannot_write(self):
        """KEVALD_TORCH_PYCACHE is read (sys.pycache_prefix) only when it is root's and nobody else may
        write it, by a worker that is no longer root: bytecode that one job's code could plant there would
        run in the next job's worker. `--role pycache` fills it as root."""
        top = tempfile.mkdtemp(prefix="kevald-torch-pyc-")   # root's 0755 when root: the folders above count
        os.chmod(top, 0o755)
        folder = os.path.join(top, "pyc")
        os.mkdir(folder, 0o755)
        os.chmod(folder, 0o777)
        d = self.start("run", {"KEVALD_TORCH_PYCACHE": folder})
        self.assertEqual(d.hello["pycache"]["active"], False, d.hello)
        self.assertIn("mode 0777", d.hello["pycache"]["detail"])
        self.finish(d)
        os.chmod(folder, 0o755)
        if os.geteuid() != 0:   # not root's: refused as well, and nothing fills it
            d = self.start("run", {"KEVALD_TORCH_PYCACHE": folder})
            self.assertIn("owned by uid", d.hello["pycache"]["detail"])
            self.finish(d)
            shutil.rmtree(top)
            return
        env = dict(os.environ, KEVALD_TORCH_PYCACHE=folder, PYTHONPATH=FAKE)
        p = subprocess.run([PY, str(helpers.WORKER), "--role", "pycache"], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pycache: bytecode of torch", p.stderr)
        d = self.start("run", {"KEVALD_TORCH_PYCACHE": folder})
        self.assertTrue(d.hello["ok"], d.hello)
        self.assertEqual(d.hello["pycache"]["active"], True, d.hello)
        found = int(re.search(r"bytecode of (\d+) of \d+ modules", d.hello["pycache"]["detail"]).group(1))
        self.assertGreater(found, 10, d.hello["pycache"])
        self.finish(d)
        os.chmod(top, 0o777)   # a folder above that others may write: refused, whatever the folder is
        d = self.start("run", {"KEVALD_TORCH_PYCACHE": folder})
        self.assertIn(f"{top}, above {folder}", d.hello["pycache"]["detail"])
        self.finish(d)
        shutil.rmtree(top)

    def test_no_gpu(self):
        d = self.start("run", {"FAKETORCH_NO_GPU": "1", "KEVALD_GPU_INDEX": "3"})
        self.assertEqual((d.hello["ok"], d.hello["error"]["stage"]), (False, "cuda"), d.hello)
        self.assertIn("KEVALD_GPU_INDEX=3", d.hello["error"]["message"])
        self.assertEqual(d.hello["torch"], "0.0-fake")
        rc, err = self.finish(d)
        self.assertEqual(rc, 1, err)

    def test_build_role(self):
        d = self.start("build")
        self.assertTrue(d.hello["ok"], d.hello)
        self.assertIn("torch-build denylist", d.hello["layers"]["seccomp"]["detail"])
        self.assertEqual(list(d.hello["startup_ms"]), ["python", "env", "sandbox", "import", "handler", "lock"])
        # one worker serves every build: each module runs in a child of its own, so what a module changes
        # (load_inline, torch, sys.modules, the environment) ends with its child and never reaches the
        # next build; each RESULT says "exiting": false and the worker reads the next JOB

        def build(i, name, source):
            res = d.job({"id": i, "kind": "build", "deadline_ms": 20000, "build_dir": os.path.join(self.root, name)},
                        source)
            self.assertIsNotNone(res, f"build {i}: no RESULT")
            self.assertEqual((res["id"], res["exiting"]), (i, False), res)
            self.assertTrue(os.path.isdir(os.path.join(self.root, name, "tmp")))
            return res

        for i, (name, ok, error) in enumerate([("correct", True, None), ("no_model_new", False, "no_model_new")]):
            res = build(i, name, SAMPLES[name])
            self.assertEqual((res["ok"], res["error"]), (ok, error), res)
        # a module that replaces load_inline (its own build "succeeds") and changes torch, sys.modules and the
        # environment; the next build on the same worker fails as it should and sees none of it
        patch = (b"import os, sys, torch\nimport torch.utils.cpp_extension as c\nc.load_inline = lambda *a, **k: None\n"
                 b"torch.kevald_mark = 1\nos.environ['KEVALD_MARK'] = '1'\nsys.modules['kevald_mark'] = c\n")
        bad = b"from torch.utils.cpp_extension import load_inline\next = load_inline('x', '')\n"
        res = build(6, "p", patch + bad)
        self.assertEqual((res["ok"], res["error"]), (False, "no_model_new"), res)   # built, no ModelNew
        res = build(7, "ext", bad)
        self.assertEqual((res["ok"], res["error"]), (False, "compile"), res)
        self.assertIn("Error building extension", res["log"])
        clean = (b"import os, sys, torch\nassert not hasattr(torch, 'kevald_mark'), 'torch was changed'\n"
                 b"assert 'KEVALD_MARK' not in os.environ and 'kevald_mark' not in sys.modules, 'state leaked'\n")
        res = build(8, "clean", clean + SAMPLES["correct"])
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        res = build(9, "syn", b"def (:\n")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)
        self.assertIn("SyntaxError", res["log"])
        self.assertIsNone(d.p.poll())   # the process that said HELLO answered them all and still runs
        rc, err = self.finish(d)   # end of input: exit 0
        self.assertEqual(rc, 0, err)
        # a build_dir outside the artifact root is the supervisor's error: exit 2, no RESULT
        d = self.start("build")
        res = d.job({"id": 10, "kind": "build", "build_dir": "/tmp/elsewhere"}, b"")
        self.assertIsNone(res)
        rc, err = self.finish(d)
        self.assertEqual(rc, 2, err)


if __name__ == "__main__":
    unittest.main()
