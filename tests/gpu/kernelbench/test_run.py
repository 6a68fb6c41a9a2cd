#!/usr/bin/env python3
"""
run.py's kevald mode against a stand-in HTTP server (no torch, no GPU): what
it submits (one `language: "kernelbench"` submission per sample, the sample's
source unchanged, its task, mode full, tags), how it reads results back
(verdicts, "suspicious" from reward_fields, CUDA error names in either
spelling or as PyTorch's message, `accept` alternatives) and its exit status
(0 when every verdict is the expected one, 1 on a wrong verdict or a wrong
CUDA error). The stand-in answers from a table keyed by the submitted source,
so a sample it does not know fails the test. Standard library only.
"""
import contextlib
import io
import json
import os
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402


class StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers):
        super().__init__(("127.0.0.1", 0), Handler)
        self.answers = answers          # source text -> (verdict, result dict)
        self.received = []              # submission bodies, in order
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        if urlparse(self.path).path != "/v1/submissions":
            return self.reply(404, {"title": "not found"})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.received.append(body)
            sid = len(self.server.received)
        self.reply(202, {"id": sid, "state": "queued"})

    def do_GET(self):
        parts = urlparse(self.path).path.split("/")
        sid = int(parts[-1])
        body = self.server.received[sid - 1]
        verdict, result = self.server.answers[body["source"]]
        self.reply(200, {"id": sid, "state": "done", "verdict": verdict, "task": body["task"], "mode": body["mode"],
                         "result": result})


def expected_answers(samples):
    """A result that deserves each sample's expected verdict, in the forms a real server may use."""
    answers = {}
    for i, e in enumerate(samples):
        src = run.read_source(e)
        v = e["expected"]
        if v == "suspicious":
            answers[src] = ("correct", {"verdict": "correct", "reward_fields": {"suspicious": True, "speedup": None}})
        elif v == "runtime_error" and e.get("error_name"):
            # Alternate the driver's name, the runtime's name and PyTorch's message.
            name = e["error_name"]
            forms = [{"kind": "cuda", "name": name},
                     {"kind": "cuda", "name": "cudaError" + "".join(w.title() for w in name.split("_")[2:])},
                     {"kind": "python", "message": "RuntimeError: CUDA error: " + run.CUDA_ERROR_TEXT[name]}]
            answers[src] = (v, {"verdict": v, "error": forms[i % 3]})
        elif v == "correct":
            clock = "device" if e.get("timing_check") == "side_stream" else "stream"
            answers[src] = (v, {"verdict": v, "timing": {"speedup": 1.5, "suspicious": False,
                                                        "shapes": [{"shape": "default", "clock": clock}]}})
        else:
            answers[src] = (v, {"verdict": v, "error": {"kind": "python", "message": "something"}})
    return answers


class KevaldMode(unittest.TestCase):
    def serve(self, answers):
        srv = StandIn(answers)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(lambda: (srv.shutdown(), srv.server_close()))
        return srv, f"http://127.0.0.1:{srv.server_address[1]}"

    def run_main(self, argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = run.main(argv)
        return rc, out.getvalue()

    def test_all_expected(self):
        samples = run.load_manifest([])
        answers = expected_answers(samples)
        # An accepted alternative: the careless stream trick flagged suspicious instead of incorrect.
        side = run.read_source(next(e for e in samples if e["name"] == "cuda_relu_side_stream"))
        answers[side] = ("correct", {"verdict": "correct", "reward_fields": {"suspicious": True}})
        srv, url = self.serve(answers)
        rc, text = self.run_main(["--url", url, "--timeout", "30"])
        self.assertEqual(rc, 0, text)
        self.assertIn(f"{len(samples)}/{len(samples)} samples got their expected verdict", text)
        self.assertEqual(len(srv.received), len(samples))
        by_source = {run.read_source(e): e for e in samples}
        run_ids = set()
        for i, body in enumerate(srv.received):
            e = by_source[body["source"]]
            self.assertEqual(body["task"], e["task"])
            self.assertEqual(body["language"], "kernelbench")
            self.assertEqual(body["mode"], "full")
            self.assertEqual(body["tags"]["sample"], i)
            run_ids.add(body["tags"]["run_id"])
            self.assertFalse({"plan", "options", "scratch", "name_expressions"} & set(body))
        self.assertEqual(len(run_ids), 1)
        row = next(line for line in text.splitlines() if line.startswith("cuda_relu_side_stream "))
        self.assertRegex(row, r"\| suspicious\s+\| yes\s")

    def test_mismatches_fail(self):
        samples = run.load_manifest([])
        answers = expected_answers(samples)
        byname = {e["name"]: run.read_source(e) for e in samples}
        # A wrong verdict, a right verdict naming the wrong CUDA error, a stream trick judged correct,
        # a careful stream trick judged correct on the stream clock alone, a correct kernel flagged
        # suspicious, and a verdict that is not a verdict: six mismatches.
        answers[byname["cuda_relu_cache_first"]] = ("correct", {"verdict": "correct"})
        answers[byname["cuda_relu_misaligned"]] = ("runtime_error", {"verdict": "runtime_error",
                                                                     "error": {"kind": "cuda",
                                                                               "name": "CUDA_ERROR_ILLEGAL_ADDRESS"}})
        answers[byname["cuda_relu_side_stream"]] = ("correct", {"verdict": "correct",
                                                                "timing": {"speedup": 40.0, "suspicious": False}})
        answers[byname["cuda_relu_side_stream_unjoined"]] = (
            "correct", {"verdict": "correct", "timing": {"speedup": 40.0, "suspicious": False,
                                                         "shapes": [{"shape": "default", "clock": "stream"}]}})
        answers[byname["torch_scalar_mul"]] = ("correct", {"verdict": "correct",
                                                           "reward_fields": {"suspicious": True}})
        answers[byname["cuda_relu_spin"]] = ("suspicious", {"verdict": "suspicious"})
        srv, url = self.serve(answers)
        rc, text = self.run_main(["--url", url, "--timeout", "30"])
        self.assertEqual(rc, 1, text)
        rows = {line.split(" | ")[0].strip(): line for line in text.splitlines() if " | " in line}
        self.assertRegex(rows["cuda_relu_cache_first"], r"\| correct\s+\| no\s")
        self.assertIn("no (error name)", rows["cuda_relu_misaligned"])
        self.assertRegex(rows["cuda_relu_side_stream"], r"\| correct\s+\| no\s")
        self.assertIn("no (side-stream work not timed)", rows["cuda_relu_side_stream_unjoined"])
        self.assertRegex(rows["torch_scalar_mul"], r"\| suspicious\s+\| no\s")
        self.assertRegex(rows["cuda_relu_spin"], r"\| suspicious\s+\| no\s")
        self.assertRegex(rows["cuda_relu_side_stream_synced"], r"\| correct\s+\| yes\s")
        self.assertIn(f"{len(samples) - 6}/{len(samples)} samples got their expected verdict", text)

    def test_only(self):
        samples = run.load_manifest(["cuda_relu", "no_model_new"])
        srv, url = self.serve(expected_answers(samples))
        rc, text = self.run_main(["--url", url, "--only", "cuda_relu", "--only", "no_model_new", "--markdown"])
        self.assertEqual(rc, 0, text)
        self.assertEqual(len(srv.received), 2)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("| sample | task | expected | got | match |"), lines[0])
        self.assertTrue(lines[1].startswith("| --- | --- |"), lines[1])
        self.assertTrue(lines[2].startswith("| cuda_relu | l1_19_relu | correct | correct | yes |"), lines[2])
        self.assertIn("2 samples in", text)
        with self.assertRaises(SystemExit):
            run.load_manifest(["no_such_sample"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
