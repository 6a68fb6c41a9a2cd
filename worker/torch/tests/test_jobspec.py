"""torchworker-jobspec: the run JOB's checks and limits (kevald_torch/jobspec.py), the
build JOB's (build.py), the seeds, and the log trimming."""
import json
import unittest

import helpers
from kevald_torch import build, jobspec, seeds
from kevald_torch.loop import BadJob

CAND, REF = "class ModelNew: pass\n", "class Model: pass\n"
BLOB = (CAND + REF).encode()


def job(**over):
    j = {"id": 5, "kind": "run", "seed": "9f1c2e0a5b7d3c11", "mode": "full", "deadline_ms": 60000,
         "timing": {"budget_ms": 2000, "target_precision": 0.01, "min_trials": 6, "max_trials": 1000, "warmup": 3},
         "correctness_trials": 3, "build_dir": "/data/torch-ext/abc",
         "sources": {"candidate": {"offset": 0, "size": len(CAND)},
                     "reference": {"offset": len(CAND), "size": len(REF)}},
         "shapes": [{"name": "default", "constants": {"batch_size": 16, "dim": 64}, "atol": 1e-4, "rtol": 1e-4}]}
    j.update(over)
    return json.loads(json.dumps(j))


assert helpers.SRC  # sys.path set up by helpers


class RunJob(unittest.TestCase):
    def test_good(self):
        r = jobspec.parse_run(job(), BLOB)
        self.assertEqual((r.id, r.seed, r.candidate, r.reference), (5, 0x9f1c2e0a5b7d3c11, CAND, REF))
        self.assertEqual((r.min_trials, r.max_trials, r.warmup, r.correctness_trials), (6, 1000, 3, 3))
        self.assertEqual(r.shapes[0]["constants"], {"batch_size": 16, "dim": 64})

    def test_launch_limits(self):
        """kevald-gpu's launch limits: absent, a forward has only the deadline; launch_factor 0 or
        absent, the ceiling always; each bounded like the deadline."""
        r = jobspec.parse_run(job(), BLOB)
        self.assertEqual((r.launch_timeout_ms, r.launch_factor), (None, None))
        r = jobspec.parse_run(job(launch_timeout_ms=10000, launch_factor=1000.0, launch_floor_ms=100), BLOB)
        self.assertEqual((r.launch_timeout_ms, r.launch_factor, r.launch_floor_ms), (10000, 1000.0, 100))
        r = jobspec.parse_run(job(launch_timeout_ms=10000, launch_factor=0), BLOB)
        self.assertEqual((r.launch_timeout_ms, r.launch_factor), (10000, None))
        for bad in ({"launch_timeout_ms": 0}, {"launch_timeout_ms": 600001}, {"launch_timeout_ms": 1.5},
                    {"launch_timeout_ms": True}, {"launch_timeout_ms": 100, "launch_factor": -1},
                    {"launch_timeout_ms": 100, "launch_factor": float("inf")},
                    {"launch_timeout_ms": 100, "launch_floor_ms": 0}):
            with self.subTest(bad):
                with self.assertRaises(BadJob):
                    jobspec.parse_run(job(**bad), BLOB)

    def test_timed_shape_sets(self):
        """timing.shapes as kevald-gpu reads it: "first" (what the server sends by default) times the
        first shape set only, "all" or none every one; anything else is a malformed JOB."""
        base = job()["timing"]
        for which, first in (("first", True), ("all", False), (None, False)):
            t = dict(base, shapes=which) if which else base
            self.assertIs(jobspec.parse_run(job(timing=t), BLOB).time_first_only, first, which)
        with self.assertRaises(BadJob):
            jobspec.parse_run(job(timing=dict(base, shapes="last")), BLOB)

    def test_defaults(self):
        j = job()
        del j["timing"], j["correctness_trials"]
        del j["shapes"][0]["atol"]
        r = jobspec.parse_run(j, BLOB)
        self.assertEqual((r.budget_ms, r.min_trials, r.correctness_trials, r.shapes[0]["atol"]), (2000, 6, 3, 1e-4))

    def test_refused(self):
        bad = {
            "seed": job(seed="xyz"), "mode": job(mode="compile"), "kind": job(kind="build"),
            "deadline": job(deadline_ms=600001), "trials": job(correctness_trials=17),
            "max_trials": job(timing={"max_trials": 10001}), "min>max": job(timing={"min_trials": 9, "max_trials": 8}),
            "budget": job(timing={"budget_ms": 60001}), "relative": job(build_dir="rel/x"),
            "outside": job(sources={"candidate": {"offset": 0, "size": 999}, "reference": {"offset": 0, "size": 1}}),
            "no shapes": job(shapes=[]), "too many shapes": job(shapes=[{"name": f"s{i}"} for i in range(9)]),
            "constant name": job(shapes=[{"name": "a", "constants": {"not ok": 1}}]),
            "constant value": job(shapes=[{"name": "a", "constants": {"x": {"y": 1}}}]),
            "nan tolerance": job(shapes=[{"name": "a", "atol": "1e-4"}]),
            "bool trials": job(correctness_trials=True),
        }
        for why, j in bad.items():
            with self.subTest(why):
                with self.assertRaises(BadJob):
                    jobspec.parse_run(j, BLOB)
        with self.assertRaises(BadJob):
            jobspec.parse_run(job(), b"\xff" * len(BLOB))


class BuildJob(unittest.TestCase):
    def test_parse(self):
        jid, dl, bd, arch = build.parse_build({"id": 3, "kind": "build", "deadline_ms": 10 ** 9,
                                               "build_dir": "/r/x/y", "arch": "sm_90a"}, "/r")
        self.assertEqual((jid, dl, bd, arch), (3, build.DEADLINE_MS_MAX, "/r/x/y", "9.0a"))
        for j in ({"id": 3, "build_dir": "x"}, {"id": 3, "build_dir": "/elsewhere"},
                  {"id": 3, "build_dir": "/r/../etc"}, {"id": 3, "kind": "run", "build_dir": "/r/a"},
                  {"id": 3, "build_dir": "/r/a", "deadline_ms": 0}, {"id": 3, "build_dir": "/r/a", "arch": "gfx90a"}):
            with self.subTest(j):
                with self.assertRaises(BadJob):
                    build.parse_build(j, "/r")

    def test_arch_default(self):
        import os
        saved = os.environ.pop("KEVALD_TORCH_ARCH", None)
        try:
            self.assertEqual(build.parse_build({"id": 1, "build_dir": "/r/a"}, "/r")[3], "9.0a")
            os.environ["KEVALD_TORCH_ARCH"] = "sm_100a"
            self.assertEqual(build.parse_build({"id": 1, "build_dir": "/r/a"}, "/r")[3], "10.0a")
        finally:
            os.environ.pop("KEVALD_TORCH_ARCH", None)
            if saved is not None:
                os.environ["KEVALD_TORCH_ARCH"] = saved

    def test_arch_list(self):
        self.assertEqual([build.arch_list(a) for a in ("sm_90a", "sm_80", "sm_100f", "sm_120a", "gfx", "sm_x")],
                         ["9.0a", "8.0", "10.0f", "12.0a", None, None])

    def test_trim_log(self):
        self.assertEqual(build.trim_log("short"), ("short", False))
        text, cut = build.trim_log("e" * 100000)
        self.assertTrue(cut)
        self.assertLessEqual(len(text.encode()), build.LOG_BYTES)
        self.assertTrue(text.startswith("eee") and "more bytes" in text)

    def test_classify(self):
        self.assertEqual(build.classify(RuntimeError("Error building extension 'x'"), ""), "compile")
        self.assertEqual(build.classify(SyntaxError("bad"), ""), "import")
        self.assertEqual(build.classify(ImportError("no module"), ""), "import")

    def test_load_module_is_fresh(self):
        m = build.load_module("X = 1\ndef f():\n    return X\n", "kevald_candidate_t")
        self.assertEqual(m.f(), 1)
        import sys
        self.assertNotIn("kevald_candidate_t", sys.modules)
        with self.assertRaises(SyntaxError):
            build.load_module("def (", "kevald_candidate_u")


class Seeds(unittest.TestCase):
    def test_distinct_and_stable(self):
        s = 0x9f1c2e0a5b7d3c11
        got = {seeds.derive(s, sh, p, t) for sh in range(3) for p in ("init", "check", "time") for t in range(20)}
        self.assertEqual(len(got), 3 * 3 * 20)
        self.assertTrue(all(0 <= x < 2 ** 63 for x in got))
        self.assertEqual(seeds.derive(s, 0, "check", 0), seeds.derive(s, 0, "check", 0))
        self.assertNotEqual(seeds.derive(s, 0, "check", 0), seeds.derive(s + 1, 0, "check", 0))


if __name__ == "__main__":
    unittest.main()
