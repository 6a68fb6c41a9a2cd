"""
torchworker-result: the run RESULT's parts (kevald_torch/result.py) against
schema/result.schema.json (with tests/integration/schemacheck.py) and against
the rules server/dispatch/resultcheck.c applies to a GPU RESULT; the CUDA
error names (cudaerr.py).
"""
import json
import math
import sys
import unittest

import helpers
from kevald_torch import cudaerr, frames, result

sys.path.insert(0, str(helpers.SRC / "tests" / "integration"))
import schemacheck  # noqa: E402

REG = schemacheck.Registry(helpers.SRC / "schema")
VALIDATOR = schemacheck.Validator(REG)
GPU = {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "index": 0, "driver": "cuda 13.0"}


FROM_GPU = ("correctness", "timing", "resources", "error", "gpu", "gpu_busy_ms", "gpu_active_ms", "wall_ms",
            "cleanup", "late_waits", "phases_ms")


def schema_errors(res):
    """Errors of @res made a stored result as server/dispatch/pipeline.c's
    pipeline_result_measured() makes it: the RESULT's members it copies
    (those not null), with the supervisor's own members beside them."""
    stored = {"verdict": res["verdict"], "task": "l1_23_softmax", "seed": "%016x" % int(res["seed"], 16),
              "error": None, "feedback": "f",
              "reward_fields": {"compiled": True, "correct": res["verdict"] == "correct", "speedup": None,
                                "speedup_vs": None, "roofline_fraction": None, "suspicious": False}}
    stored.update({k: res[k] for k in FROM_GPU if res.get(k) is not None})
    doc = REG.doc("result.schema.json")
    return VALIDATOR.errors(stored, doc, "result.schema.json")


def resultcheck(res, deadline_ms):
    """server/dispatch/resultcheck.c's GPU rules, for the RESULTs built here."""
    for k in ("gpu_busy_ms", "gpu_active_ms", "wall_ms"):
        assert math.isfinite(res[k]) and res[k] >= 0, k
    assert all(math.isfinite(v) and v >= 0 for v in res["phases_ms"].values())
    assert res["error"] is None or isinstance(res["error"].get("kind"), str)
    if res["verdict"] != "correct":
        return None
    assert res["correctness"]["passed"] is True
    assert all(s["passed"] is True for s in res["correctness"]["shapes"])
    logs, stated = [], True
    for s in res["timing"]["shapes"]:
        if s.get("speedup") is None:
            stated = False
            continue
        c, r = s["candidate"]["median_ms"], s["reference"]["median_ms"]
        assert 1e-4 <= c <= deadline_ms and 1e-4 <= r <= deadline_ms
        assert abs(s["speedup"] - r / c) <= 1e-6 * (r / c)
        logs.append(math.log(r / c))
    ts = res["timing"]["speedup"]
    if ts > 0:
        assert stated and logs
        geo = math.exp(sum(logs) / len(logs))
        assert abs(ts - geo) <= 1e-6 * geo
    return ts


def correct_result():
    shapes = []
    for name in ("default", "small"):
        e = result.shape_check(name)
        e.update(passed=True, trials=3, inputs_intact=True, deterministic=True, revalidated=True,
                 buffers=[result.buffer_check("output", 4096, 0, 0, 1.2e-7, 3e-6, [])])
        shapes.append(e)
    t1 = result.shape_timing("default", [0.0123, 0.0121, 0.0125, 0.0122], [0.0246, 0.0250, 0.0244, 0.0249],
                             "precision", 10, "stream")
    t2 = result.shape_timing("small", [0.004, 0.0041, 0.0039], [0.002, 0.0021, 0.002], "budget", 6, "device")
    return result.assemble(7, "9f1c2e0a5b7d3c11", "correct", shapes, result.timing_json([t1, t2]), None, GPU,
                           {"load": 12.0, "correctness": 30.5, "timing": 200.0, "cleanup": 1.0}, 250.0, 3.5)


class Result(unittest.TestCase):
    def test_correct(self):
        res = correct_result()
        self.assertEqual(schema_errors(res), [])
        ts = resultcheck(res, 60000)
        t = res["timing"]["shapes"]
        self.assertAlmostEqual(t[0]["speedup"], 0.02475 / 0.01225)
        self.assertAlmostEqual(ts, math.sqrt(t[0]["speedup"] * t[1]["speedup"]))
        self.assertIn("outside the worker's stream", res["timing"]["note"])
        self.assertEqual(t[0]["inputs"], "fresh per run")
        self.assertTrue(res["correctness"]["passed"])
        # it goes through a frame as JSON (no NaN or infinity in it)
        frames.pack(frames.RESULT, res)

    def test_too_short_to_time_states_no_speedup(self):
        t = result.shape_timing("tiny", [5e-5] * 5, [0.01] * 5, "precision", 5, "stream")
        self.assertIsNone(t["speedup"])
        timing = result.timing_json([t])
        self.assertEqual(timing["speedup"], 0.0)
        res = correct_result()
        res["timing"] = timing
        self.assertEqual(resultcheck(res, 60000), 0.0)
        self.assertEqual(schema_errors(res), [])

    def test_failures(self):
        e = result.shape_check("default")
        e["buffers"] = [result.buffer_check("output", 100, 3, 1, float("inf"), 0.5,
                                            [(1, float("nan"), 0.5), (2, float("-inf"), 1.0), (9, 2.0, 1.0)])]
        err = result.error("mismatch", "3 of 100 elements differ", shape="default", phase="correctness",
                           buffer="output", mismatches=3, count=100, trial=0, unused=None)
        res = result.assemble(8, "ab", "incorrect", [e], None, err, GPU, {"load": 1.0, "correctness": 2.0}, 3.0)
        self.assertEqual(schema_errors(res), [])
        self.assertNotIn("unused", res["error"])
        b = res["correctness"]["shapes"][0]["buffers"][0]
        self.assertIsNone(b["max_abs"])   # not a finite number: none
        self.assertEqual([m["got"] for m in b["first_mismatches"]], ["nan", "-inf", 2.0])
        self.assertIsNone(resultcheck(res, 60000))
        self.assertFalse(res["correctness"]["passed"])
        json.dumps(res, allow_nan=False)
        cuda = result.error("cuda", "CUDA error: an illegal memory access was encountered",
                            name="CUDA_ERROR_ILLEGAL_ADDRESS", sticky=True, side="candidate", shape="default",
                            phase="correctness", trial=0)
        res = result.assemble(9, "ab", "runtime_error", [result.shape_check("default")], None, cuda, GPU, {}, 3.0,
                              exiting=True)
        self.assertEqual(schema_errors(res), [])
        self.assertIs(res["exiting"], True)
        with self.assertRaises(ValueError):
            result.assemble(9, "ab", "compiled", [], None, None, GPU, {}, 1.0)

    def test_timeout_result(self):
        res = result.timeout_result(10, "ab", 60000, GPU, "small", "timing")
        self.assertEqual(schema_errors(res), [])
        self.assertEqual((res["verdict"], res["error"]["kind"], res["error"]["shape"], res["error"]["phase"]),
                         ("timeout", "timeout", "small", "timing"))
        self.assertTrue(res["exiting"])
        self.assertLess(len(frames.pack(frames.RESULT, res)), 64 << 10)   # the watchdog keeps at most 64 KiB

    def test_value_json(self):
        self.assertEqual([result.value_json(x) for x in (1.5, float("nan"), float("inf"), float("-inf"))],
                         [1.5, "nan", "inf", "-inf"])


class CudaErrors(unittest.TestCase):
    def test_names(self):
        cases = [
            ("AcceleratorError", "CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
             "asynchronously reported", ("CUDA_ERROR_ILLEGAL_ADDRESS", True)),
            ("RuntimeError", "CUDA error: misaligned address", ("CUDA_ERROR_MISALIGNED_ADDRESS", True)),
            ("RuntimeError", "CUDA error: device-side assert triggered", ("CUDA_ERROR_ASSERT", True)),
            ("RuntimeError", "CUDA error: unspecified launch failure", ("CUDA_ERROR_LAUNCH_FAILED", True)),
            ("RuntimeError", "CUDA error: too many resources requested for launch",
             ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", False)),
            ("RuntimeError", "CUDA error: invalid configuration argument", ("CUDA_ERROR_INVALID_VALUE", False)),
            ("OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB", ("CUDA_ERROR_OUT_OF_MEMORY", False)),
            ("RuntimeError", "CUDA error: no kernel image is available for execution on the device",
             ("CUDA_ERROR_NO_BINARY_FOR_GPU", False)),
            ("RuntimeError", "CUDA error: something new", ("CUDA_ERROR_UNKNOWN", True)),
        ]
        for tname, text, want in cases:
            with self.subTest(text):
                self.assertEqual(cudaerr.classify(tname, text), want)

    def test_not_cuda(self):
        self.assertIsNone(cudaerr.classify("ValueError", "invalid argument to my function"))
        self.assertIsNone(cudaerr.classify("RuntimeError", "shape mismatch"))


if __name__ == "__main__":
    unittest.main()
