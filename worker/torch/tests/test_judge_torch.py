"""
torchworker-judge_torch: the judge's tamper check on real PyTorch objects, on
the CPU (no CUDA call: the judge's synchronize is replaced by a no-op). What
a candidate changes in the interpreter must be named exactly: a name set on
torch.Tensor over one it inherits from TensorBase (__gt__, sum), one set on
nn.Module over one it inherits from object, a replaced nn.Module or
nn.functional member; a TorchFunctionMode or TorchDispatchMode left entered,
the default dtype (and device, torch 2.3+), grad mode, inference mode,
autocast, deterministic algorithms, __torch_function__ disabled. Each case
puts back what it changed and the check must then report nothing again; an
untouched interpreter, and a candidate that defines its own nn.Module,
registers buffers and parameters and calls F.relu, report nothing, nor do
the names Python adds to classes itself (__annotations__, __slotnames__). Runs on
this python3 or /usr/bin/python3 (Debian's python3-torch), whichever has
torch; exits 77 (skipped) where neither has.
"""
import copy
import importlib.util
import os
import subprocess
import sys
import types
import unittest

if importlib.util.find_spec("torch") is None:
    if os.path.exists("/usr/bin/python3") and not os.environ.get("KEVALD_TEST_TORCH_PYTHON"):
        probe = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True, timeout=120)
        if probe.returncode == 0:
            env = dict(os.environ, KEVALD_TEST_TORCH_PYTHON="1")
            sys.exit(subprocess.run(["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:],
                                    env=env, timeout=600).returncode)
    print("skipped: no python3 with torch here")
    sys.exit(77)

import helpers  # noqa: E402,F401 (puts kevald_torch on the path)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from kevald_torch import build, judge, judge_check  # noqa: E402

judge._sync = lambda: None   # no GPU here: the candidate's work is done when it returns

CANDIDATE = b"""
import torch
import torch.nn as nn
import torch.nn.functional as F
class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n))
        self.register_buffer("scale", torch.full((n,), 0.5))
        self.lin = nn.Linear(n, n)
    def forward(self, x):
        return F.relu(self.lin(x @ self.w)) * self.scale
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.block = Block(n)
        self.register_parameter("bias", nn.Parameter(torch.zeros(n)))
    def forward(self, x):
        return self.block(x) + self.bias
"""


def bare_judge():
    """A Judge with the state the run role's start-up records, without its GPU set-up."""
    j = judge.Judge.__new__(judge.Judge)
    j.blamed = []   # what the judge told the system-call filter's handler, in order
    j.w = types.SimpleNamespace(confine=types.SimpleNamespace(blame=j.blamed.append))
    j.snapshot = judge._snapshot(judge._watched_owners())
    j.state = judge._state()
    j.tampered = False
    return j


class RealTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.j = bare_judge()

    def setUp(self):
        self.j.tampered = False

    def test_the_candidate_is_blamed_only_while_it_runs(self):
        """A forbidden system call is the candidate's while its code runs (kevald_confine_blame()): the
        judge turns the blame on around each call into it and off after, also when it raises."""
        del self.j.blamed[:]
        self.assertIs(self.j.candidate(lambda: self.j.blamed[-1]), True)
        self.assertEqual(self.j.blamed, [True, False])

        def raises():
            raise ValueError("the candidate's")
        with self.assertRaises(judge.CandidateError):
            self.j.candidate(raises)
        self.assertEqual(self.j.blamed, [True, False, True, False])

    def assertClean(self):
        self.assertIsNone(judge._changed(self.j.snapshot))
        self.assertIsNone(judge._state_changed(self.j.state))

    def rejected(self, fn):
        """The message of the tamper CheckFail that running @fn as a candidate raises."""
        with self.assertRaises(judge_check.CheckFail) as cm:
            self.j.candidate(fn)
        self.assertEqual(cm.exception.kind, "tamper")
        return str(cm.exception)

    def test_untouched_and_a_plain_candidate(self):
        self.assertClean()
        j = self.j
        mod = j.candidate(lambda: build.load_module(CANDIDATE, "kevald_candidate_t"))
        self.assertIsNone(build.check_model_new(mod))
        model = j.candidate(lambda: mod.ModelNew(8).eval())
        x = torch.randn(4, 8)
        with torch.no_grad():
            out = j.candidate(lambda: model(x))
        self.assertEqual(tuple(out.shape), (4, 8))
        self.assertFalse(j.tampered)
        self.assertClean()

    def test_names_python_adds_to_classes(self):
        """An empty __annotations__ at the first read of cls.__annotations__, copy's cached __slotnames__:
        each shadows the one nn.Module has, and neither is the candidate's change."""
        copy.deepcopy(nn.Module())   # nn.Module.__slotnames__ before the snapshot, as for __annotations__
        j = bare_judge()
        self.assertNotIn("__annotations__", vars(nn.Identity))
        self.assertNotIn("__slotnames__", vars(nn.Identity))
        j.candidate(lambda: (nn.Identity.__annotations__, copy.deepcopy(nn.Sequential(nn.Identity(), nn.Linear(2, 2)))))
        self.assertIn("__annotations__", vars(nn.Identity))
        self.assertIn("__slotnames__", vars(nn.Identity))
        self.assertFalse(j.tampered)
        self.assertIsNone(judge._changed(j.snapshot))
        # taken as they are now by the fast comparison, the class is still checked name by name
        forward = nn.Identity.forward
        nn.Identity.forward = lambda self, x: x
        try:
            self.assertEqual(judge._changed(j.snapshot), "Identity.forward")
        finally:
            nn.Identity.forward = forward
        self.assertIsNone(judge._changed(j.snapshot))

    def test_class_members(self):
        """(owner, name, value set, what is reported): set over an inherited name, or replacing one."""
        self.assertNotIn("__gt__", vars(torch.Tensor))
        self.assertNotIn("sum", vars(torch.Tensor))
        self.assertNotIn("__getattribute__", vars(nn.Module))
        cases = [(torch.Tensor, "__gt__", lambda self, o: self != self, "Tensor.__gt__"),
                 (torch.Tensor, "sum", lambda self, *a, **k: self, "Tensor.sum"),
                 (nn.Module, "__getattribute__", object.__getattribute__, "Module.__getattribute__"),
                 (nn.Module, "register_buffer", lambda *a, **k: None, "Module.register_buffer"),
                 (nn.Linear, "forward", lambda self, x: x, "Linear.forward"),
                 (F, "relu", lambda x, inplace=False: x, "torch.nn.functional.relu"),
                 (torch, "softmax", lambda x, dim: x, "torch.softmax")]
        for owner, name, value, reported in cases:
            with self.subTest(reported):
                had = name in vars(owner)
                old = vars(owner).get(name)
                try:
                    msg = self.rejected(lambda: setattr(owner, name, value))
                    self.assertIn(f"the candidate replaced {reported}, ", msg)
                finally:
                    if had:
                        setattr(owner, name, old)
                    else:
                        delattr(owner, name)
                self.assertClean()

    def test_namespace_after_a_name_added(self):
        """A name added to a namespace is no change (torch imports lazily); a function replaced after it is."""
        sync = torch.cuda.synchronize
        torch.cuda.kevald_test_added = 1
        try:
            self.assertIsNone(judge._changed(self.j.snapshot))
            self.assertIsNone(judge._changed(self.j.snapshot))
            msg = self.rejected(lambda: setattr(torch.cuda, "synchronize", lambda device=None: None))
        finally:
            torch.cuda.synchronize = sync
            del torch.cuda.kevald_test_added
        self.assertIn("the candidate replaced torch.cuda.synchronize, ", msg)
        self.assertClean()

    def test_modes_and_defaults_left_changed(self):
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode
        fmode, dmode = TorchFunctionMode(), TorchDispatchMode()
        no_tf = torch._C.DisableTorchFunction()
        inference = torch.inference_mode()
        cases = [(fmode.__enter__, lambda: fmode.__exit__(None, None, None),
                  "the TorchFunctionMode stack's depth (was 0, now 1)"),
                 (dmode.__enter__, lambda: dmode.__exit__(None, None, None),
                  "the TorchDispatchMode stack's depth (was 0, now 1)"),
                 (lambda: torch.set_default_dtype(torch.float64), lambda: torch.set_default_dtype(torch.float32),
                  "the default dtype (was torch.float32, now torch.float64)"),
                 (lambda: torch.set_grad_enabled(False), lambda: torch.set_grad_enabled(True),
                  "grad mode (was True, now False)"),
                 (inference.__enter__, lambda: inference.__exit__(None, None, None),
                  "inference mode (was False, now True)"),
                 (lambda: torch.use_deterministic_algorithms(True), lambda: torch.use_deterministic_algorithms(False),
                  "deterministic algorithms (was False, now True)"),
                 (lambda: torch.set_autocast_enabled(True), lambda: torch.set_autocast_enabled(False),
                  "autocast on the GPU (was False, now True)"),
                 (no_tf.__enter__, lambda: no_tf.__exit__(None, None, None),
                  "__torch_function__ handling (DisableTorchFunction) (was True, now False)")]
        if hasattr(torch, "set_default_device"):
            cases.append((lambda: torch.set_default_device("meta"), lambda: torch.set_default_device(None),
                          "the default device (was cpu, now meta)"))
        else:
            print("torch", torch.__version__, "has no set_default_device: that case is not run")
        for do, undo, reported in cases:
            with self.subTest(reported):
                try:
                    msg = self.rejected(do)
                finally:
                    undo()
                self.assertIn(f"the candidate left {reported}: ", msg)
                self.assertClean()

    def test_grad_mode_is_the_judges_at_the_call(self):
        """Under the judge's no_grad, grad mode off is the judge's own; turned on, it is the candidate's."""
        with torch.no_grad():
            self.j.candidate(lambda: torch.randn(2).relu())
            try:
                msg = self.rejected(lambda: torch.set_grad_enabled(True))
            finally:
                torch.set_grad_enabled(False)
        self.assertIn("the candidate left grad mode (was False, now True): ", msg)
        self.assertClean()

    def test_a_change_between_calls_stops_the_reference(self):
        """What the candidate's code changes outside its calls (a finalizer) is seen before the reference runs."""
        torch.set_default_dtype(torch.float64)
        try:
            with self.assertRaises(judge_check.CheckFail) as cm:
                self.j.reference(lambda: self.fail("the reference ran"))
        finally:
            torch.set_default_dtype(torch.float32)
        self.assertEqual(cm.exception.kind, "tamper")
        self.assertIn("the default dtype (was torch.float32, now torch.float64)", str(cm.exception))
        self.assertClean()


if __name__ == "__main__":
    unittest.main()
