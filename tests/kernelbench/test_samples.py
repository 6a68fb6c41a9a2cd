#!/usr/bin/env python3
"""
The ModelNew samples and their manifest, checked without torch or a GPU.

What runs on the GPU host (tests/gpu/kernelbench/run.py) is only as good as
what it is handed: here every sample parses as Python (but the one meant not
to), defines a ModelNew nn.Module with a forward (but the ones meant not to),
the manifest names existing samples, existing tasks and valid verdicts and
CUDA error names, the samples' load_inline extensions have distinct names
(torch keys its build cache and loaded modules by that name), each sample's
kind matches its code, and make_runs.py writes KernelBench's file names.
Where the KernelBench task family is present (tasks/kernelbench/index.json),
each ModelNew's constructor also takes the arguments of its task's Model.
Standard library only; `meson test kernelbench-samples`.
"""
import ast
import filecmp
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_runs  # noqa: E402

SAMPLES = os.path.join(HERE, "samples")
VERDICT_C = os.path.join(ROOT, "common", "verdict.c")
KB_INDEX = os.environ.get("KEVALD_KB_INDEX", os.path.join(ROOT, "tasks", "kernelbench", "index.json"))
CUDA_H = os.environ.get("KEVALD_CUDA_HOME", "/usr/local/cuda") + "/include/cuda.h"
KINDS = ("cuda", "triton", "torch")
FORMS = ("syntax_error", "no_model_new", "model_new_not_module", "ctor_mismatch")
KB_VERDICTS = ("correct", "incorrect", "compile_error", "runtime_error", "timeout", "crash")


def judged_verdicts():
    """The verdicts a finished full-mode submission can have, from common/verdict.c's table, plus 'suspicious'."""
    with open(VERDICT_C, encoding="utf-8") as f:
        names = set(re.findall(r'\{\s*"([a-z_]+)",\s*\d+,\s*(?:true|false)\s*\}', f.read()))
    if "correct" not in names or "runtime_error" not in names:
        raise AssertionError(f"could not read the verdict table in {VERDICT_C}: {sorted(names)}")
    return (names - {"compiled", "cancelled", "internal_error"}) | {"suspicious"}


def task_names():
    """Every task name of tasks/level1 and tasks/level2 (the KernelBench family reuses them)."""
    names = set()
    for level in ("level1", "level2"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, "tasks", level)):
            for fn in files:
                if fn.endswith(".json"):
                    with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                        names.add(json.load(f)["name"])
    return names


def top_class(tree, name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def is_nn_module(base):
    """nn.Module or torch.nn.Module as written in a class's bases."""
    return isinstance(base, ast.Attribute) and base.attr == "Module" and (
        (isinstance(base.value, ast.Name) and base.value.id == "nn")
        or (isinstance(base.value, ast.Attribute) and base.value.attr == "nn"))


def method(cls, name):
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def ctor_arity(fn):
    """(required, total) positional parameters of an __init__ after self; total None with *args."""
    a = fn.args
    params = a.posonlyargs + a.args
    n = len(params) - 1
    return n - len(a.defaults), (None if a.vararg else n)


def load_inline_names(tree):
    """The name= of every load_inline(...) call."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "load_inline":
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    out.append(kw.value.value)
    return out


class Samples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.manifest = make_runs.load_manifest()
        cls.entries = cls.manifest["samples"]
        cls.sources = {}
        for e in cls.entries:
            with open(os.path.join(SAMPLES, e["name"] + ".py"), encoding="utf-8") as f:
                cls.sources[e["name"]] = f.read()

    def test_manifest_fields(self):
        verdicts = judged_verdicts()
        tasks = task_names()
        self.assertGreaterEqual(len(self.entries), 30)
        names = [e["name"] for e in self.entries]
        self.assertEqual(len(names), len(set(names)), "duplicate sample names")
        for e in self.entries:
            with self.subTest(sample=e["name"]):
                self.assertRegex(e["name"], r"^[a-z0-9_]+$")
                self.assertIn(e["task"], tasks)
                self.assertIn(e["kind"], KINDS)
                self.assertIn(e["expected"], verdicts)
                for v in e.get("accept", []):
                    self.assertIn(v, verdicts)
                    self.assertNotEqual(v, e["expected"])
                self.assertIn(e["kernelbench"], KB_VERDICTS)
                self.assertGreater(len(e["why"]), 20)
                if "error_name" in e:
                    self.assertEqual(e["expected"], "runtime_error")
                    self.assertRegex(e["error_name"], r"^CUDA_ERROR_[A-Z_]+$")
                if "form" in e:
                    self.assertIn(e["form"], FORMS)
                if "timing_check" in e:
                    self.assertEqual(e["timing_check"], "side_stream")
                    self.assertEqual(e["expected"], "correct")
                self.assertTrue(set(e) <= {"name", "task", "kind", "expected", "accept", "error_name", "form",
                                           "timing_check", "kernelbench", "why"}, sorted(e))

    def test_coverage(self):
        """The kinds of samples issue 29 asks for are all there."""
        by = lambda **kw: [e for e in self.entries if all(e.get(k) == v for k, v in kw.items())]
        for kind in KINDS:
            self.assertTrue(by(kind=kind, expected="correct"), f"no correct {kind} sample")
        for level in (1, 2):
            self.assertTrue([e for e in self.entries if make_runs.level_problem(e["task"])[0] == level
                             and e["expected"] == "correct"], f"no correct level-{level} sample")
        self.assertTrue([e for e in by(kind="cuda", expected="correct") if e["task"].startswith("l2_")])
        for v in ("incorrect", "runtime_error", "timeout", "compile_error", "rejected"):
            self.assertTrue(by(expected=v), f"no sample expected {v}")
        self.assertTrue([e for e in self.entries if "suspicious" in e.get("accept", [])])
        self.assertTrue(by(timing_check="side_stream"), "no stream-trick sample whose timing is checked")
        self.assertTrue([e for e in self.entries if e.get("error_name") == "CUDA_ERROR_ILLEGAL_ADDRESS"])

    def test_no_stray_files(self):
        on_disk = {fn[:-3] for fn in os.listdir(SAMPLES) if fn.endswith(".py")}
        self.assertEqual(on_disk, {e["name"] for e in self.entries})

    def test_cuda_error_names_exist(self):
        if not os.path.exists(CUDA_H):
            self.skipTest(f"no {CUDA_H}")
        with open(CUDA_H, encoding="utf-8", errors="replace") as f:
            header = f.read()
        for e in self.entries:
            if "error_name" in e:
                self.assertRegex(header, r"\b" + e["error_name"] + r"\s*=", e["name"])

    def test_sources_parse_and_define_model_new(self):
        for e in self.entries:
            src, form = self.sources[e["name"]], e.get("form")
            with self.subTest(sample=e["name"]):
                if form == "syntax_error":
                    with self.assertRaises(SyntaxError):
                        ast.parse(src)
                    self.assertIn("class ModelNew(nn.Module)", src)
                    continue
                tree = ast.parse(src, filename=e["name"] + ".py")
                cls = top_class(tree, "ModelNew")
                if form == "no_model_new":
                    self.assertIsNone(cls)
                    self.assertNotRegex(src, r"class\s+ModelNew\b")
                    continue
                self.assertIsNotNone(cls, "no top-level class ModelNew")
                self.assertIsNotNone(method(cls, "forward"))
                self.assertIsNotNone(method(cls, "__init__"))
                self.assertEqual(any(is_nn_module(b) for b in cls.bases), form != "model_new_not_module")

    def test_kind_matches_code(self):
        for e in self.entries:
            src = self.sources[e["name"]]
            with self.subTest(sample=e["name"]):
                self.assertEqual("load_inline(" in src, e["kind"] == "cuda")
                self.assertEqual("@triton.jit" in src, e["kind"] == "triton")
                self.assertTrue(src.startswith("# KernelBench level "), "opens with the problem it answers")
                lp = make_runs.level_problem(e["task"])
                self.assertTrue(src.startswith(f"# KernelBench level {lp[0]}, problem {lp[1]} "),
                                "the header names the task's level and problem")

    def test_extension_names_unique(self):
        seen = {}
        for e in self.entries:
            if e["kind"] != "cuda":
                continue
            names = load_inline_names(ast.parse(self.sources[e["name"]]))
            self.assertTrue(names, e["name"])
            for n in names:
                self.assertFalse(n in seen, f"{e['name']} and {seen.get(n)} both build extension {n}")
                seen[n] = e["name"]

    def test_constructor_matches_task_model(self):
        if not os.path.exists(KB_INDEX):
            self.skipTest("tasks/kernelbench/index.json not present (the task family is written elsewhere)")
        with open(KB_INDEX, encoding="utf-8") as f:
            index = {t["name"]: t for t in json.load(f)["tasks"]}
        for e in self.entries:
            if e.get("form") in ("syntax_error", "no_model_new", "model_new_not_module"):
                continue
            with self.subTest(sample=e["name"]):
                self.assertIn(e["task"], index)
                with open(os.path.join(os.path.dirname(KB_INDEX), index[e["task"]]["module"]), encoding="utf-8") as f:
                    ref = top_class(ast.parse(f.read()), "Model")
                self.assertIsNotNone(ref)
                ref_req, ref_total = ctor_arity(method(ref, "__init__"))
                new_req, new_total = ctor_arity(method(top_class(ast.parse(self.sources[e["name"]]), "ModelNew"),
                                                       "__init__"))
                # get_init_inputs() gives the Model's required arguments at least, at most all of them.
                fits = new_req <= ref_req and (new_total is None or ref_total is None or new_total >= ref_req)
                self.assertEqual(fits, e.get("form") != "ctor_mismatch",
                                 f"ModelNew takes {new_req}..{new_total}, Model {ref_req}..{ref_total}")


class Runs(unittest.TestCase):
    def test_layout_names(self):
        manifest = make_runs.load_manifest()
        with tempfile.TemporaryDirectory() as tmp:
            written = make_runs.write_runs(tmp, "r0", manifest)
            files = sorted(os.listdir(os.path.join(tmp, "r0")))
            self.assertEqual(len(files), len(manifest["samples"]))
            pat = re.compile(r"^level_([12])_problem_([0-9]+)_sample_([0-9]+)_kernel\.py$")
            per_problem = {}
            for fn in files:
                m = pat.match(fn)
                self.assertIsNotNone(m, fn)
                per_problem.setdefault((int(m.group(1)), int(m.group(2))), []).append(int(m.group(3)))
            for lp, ids in per_problem.items():
                self.assertEqual(sorted(ids), list(range(len(ids))), f"sample ids of {lp} not 0..n-1")
            for path, entry in written:
                self.assertTrue(filecmp.cmp(path, os.path.join(SAMPLES, entry["name"] + ".py"), shallow=False))
            byname = {entry["name"]: os.path.basename(path) for path, entry in written}
            # Written out by hand from the manifest's order, as KernelBench names them.
            self.assertEqual(byname["cuda_relu"], "level_1_problem_19_sample_0_kernel.py")
            self.assertEqual(byname["cuda_gemm_add_relu"], "level_2_problem_76_sample_0_kernel.py")
            self.assertEqual(byname["cuda_gemm_relu_add_wrong_order"], "level_2_problem_76_sample_1_kernel.py")
            self.assertEqual(byname["torch_scalar_mul"], "level_1_problem_5_sample_0_kernel.py")
            # A second write over the same tree is a no-op; a different file in the way is refused.
            make_runs.write_runs(tmp, "r0", manifest)
            with open(os.path.join(tmp, "r0", byname["cuda_relu"]), "a", encoding="utf-8") as f:
                f.write("# edited\n")
            with self.assertRaises(FileExistsError):
                make_runs.write_runs(tmp, "r0", manifest)

    def test_task_names(self):
        self.assertEqual(make_runs.level_problem("l2_76_gemm_add_relu"), (2, 76))
        for bad in ("relu", "l3_1_x", "l1__relu", "l1_19"):
            with self.assertRaises(ValueError):
                make_runs.level_problem(bad)


if __name__ == "__main__":
    unittest.main(verbosity=1)
