"""
torchworker-loop: the frame loop (kevald_torch/loop.py) on pipes, and the real
kevald-torch started the way the dispatcher starts it, on this host without
PyTorch: its HELLO says ok false with the failing stage, and it exits 1.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import helpers
from kevald_torch import frames, loop


def run_loop(data):
    """Feed @data to loop.run(); returns (exit status, the jobs handled)."""
    r, w = os.pipe()
    t = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
    t.start()
    seen = []

    def handler(job, blob):
        seen.append((job, blob))
        return 4 if job.get("stop") else None
    try:
        rc = loop.run(r, "torch-test", handler)
    finally:
        t.join()
        os.close(r)
    return rc, seen


JOB = frames.JOB


class Loop(unittest.TestCase):
    def test_jobs_then_end_of_input(self):
        rc, seen = run_loop(frames.pack(JOB, {"id": 1}, b"src") + frames.pack(JOB, {"id": 2}))
        self.assertEqual(rc, loop.EXIT_OK)
        self.assertEqual(seen, [({"id": 1}, b"src"), ({"id": 2}, b"")])

    def test_shutdown_ends_before_later_jobs(self):
        rc, seen = run_loop(frames.pack(JOB, {"id": 1}) + frames.pack(frames.SHUTDOWN, b"") +
                            frames.pack(JOB, {"id": 2}))
        self.assertEqual((rc, [j["id"] for j, _ in seen]), (0, [1]))

    def test_handler_exit_status(self):
        rc, seen = run_loop(frames.pack(JOB, {"id": 1, "stop": True}) + frames.pack(JOB, {"id": 2}))
        self.assertEqual((rc, len(seen)), (4, 1))

    def test_bad_frames_exit_2(self):
        cases = {
            "hello from the supervisor": frames.pack(frames.HELLO, {"id": 1}),
            "result from the supervisor": frames.pack(frames.RESULT, {"id": 1}),
            "bad magic": b"KVF2" + frames.pack(JOB, {"id": 1})[4:],
            "truncated": frames.pack(JOB, {"id": 1})[:-2],
            "not JSON": frames.pack(JOB, b"{nope"),
            "not an object": frames.pack(JOB, [1, 2]),
            "no id": frames.pack(JOB, {"kind": "run"}),
            "negative id": frames.pack(JOB, {"id": -1}),
            "boolean id": frames.pack(JOB, {"id": True}),
            "string id": frames.pack(JOB, {"id": "1"}),
        }
        for why, data in cases.items():
            with self.subTest(why):
                rc, seen = run_loop(data)
                self.assertEqual((rc, seen), (loop.EXIT_PROTOCOL, []))

    def test_bad_job_from_handler_exits_2(self):
        r, w = os.pipe()
        os.write(w, frames.pack(JOB, {"id": 3}))
        os.close(w)

        def handler(job, blob):
            raise loop.BadJob("build_dir is not an absolute path")
        try:
            self.assertEqual(loop.run(r, "torch-test", handler), loop.EXIT_PROTOCOL)
        finally:
            os.close(r)


@unittest.skipIf(helpers.have_torch(), "PyTorch is installed here: the start-up without it cannot be seen")
@unittest.skipUnless(helpers.lib_loads(), "libkevald-confine.so cannot be loaded into Python here")
class HelloWithoutTorch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kevald-torch-test-")
        os.chmod(self.tmp, 0o777)

    def hello(self, role, env=None, args=()):
        env = dict({"KEVALD_TORCH_EXT_ROOT": self.tmp}, **(env or {}))
        p = helpers.start(role, env, args)
        fr = helpers.read_frame(p)
        rc, err = helpers.finish(p)
        self.assertIsNotNone(fr, f"no HELLO; stderr: {err}")
        t, hello, _ = fr
        self.assertEqual(t, frames.HELLO)
        return rc, hello, err

    def test_build_role(self):
        # run as root, the build role drops to uid 65534 or refuses: its Python must be readable by nobody
        py = helpers.nobody_python()
        if py is None:
            self.skipTest("run as root, and no python3 that uid 65534 can run here")
        env = {}
        if subprocess.run([py, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"],
                          capture_output=True, timeout=60).returncode == 0:
            # that one has PyTorch: a torch that cannot be imported goes first on its path
            stub = os.path.join(self.tmp, "stub")
            os.makedirs(os.path.join(stub, "torch"))
            with open(os.path.join(stub, "torch", "__init__.py"), "w") as f:
                f.write("raise ImportError('no torch in this test')\n")
            for d in (stub, os.path.join(stub, "torch")):
                os.chmod(d, 0o755)
            env["PYTHONPATH"] = stub
        helpers.PYTHON = py
        try:
            rc, hello, err = self.hello("build", env)
        finally:
            helpers.PYTHON = None
        self.assertEqual(rc, loop.EXIT_FAILED, err)
        self.assertEqual(hello["role"], "torch-build")
        self.assertIs(hello["ok"], False)
        self.assertEqual(hello["error"]["stage"], "import", hello)
        self.assertIn("torch", hello["error"]["message"])
        self.assertIsInstance(hello["pid"], int)
        self.assertTrue(hello["python"])
        # the sandbox was entered before the import failed: every layer is reported
        for layer in ("pdeathsig", "fds", "rlimit", "cwd", "netns", "uid", "dumpable", "no_new_privs",
                      "landlock", "seccomp"):
            self.assertIn(layer, hello["layers"], hello["layers"])
        self.assertTrue(hello["layers"]["rlimit"]["active"])
        self.assertTrue(hello["layers"]["no_new_privs"]["active"])
        if hello["layers"]["landlock"]["active"]:
            self.assertIn("torch-build profile", hello["layers"]["landlock"]["detail"])
            self.assertIn(os.path.realpath(self.tmp), hello["layers"]["landlock"]["detail"])
        self.assertIn("start-up failed (import)", err)

    def test_run_role(self):
        rc, hello, err = self.hello("run", {"KEVALD_GPU_INDEX": "0"})
        self.assertEqual(rc, loop.EXIT_FAILED, err)
        self.assertEqual((hello["role"], hello["ok"], hello["error"]["stage"]), ("torch-run", False, "import"))
        if hello["layers"]["landlock"]["active"]:
            self.assertIn("torch-run profile", hello["layers"]["landlock"]["detail"])

    def test_run_role_keeps_the_supervisors_gpu(self):
        """kevald serve pins a run worker as kevald-gpu: CUDA_VISIBLE_DEVICES=<its GPU>, KEVALD_GPU_INDEX=0
        (an index among the visible devices); overwriting CUDA_VISIBLE_DEVICES with KEVALD_GPU_INDEX put
        every GPU's run worker on GPU 0."""
        from kevald_torch.main import run_devices
        self.assertEqual(run_devices("3", "0"), "3")
        self.assertEqual(run_devices("2,5", "1"), "5")
        self.assertEqual(run_devices(None, "2"), "2")   # not pinned (tests/gpu/torch/drive.py): the index
        for visible, index in (("3", "1"), ("", "0"), (None, "x"), (None, "-1")):
            self.assertIsNone(run_devices(visible, index), (visible, index))
        rc, hello, err = self.hello("run", {"CUDA_VISIBLE_DEVICES": "3", "KEVALD_GPU_INDEX": "1"})
        self.assertEqual((rc, hello["error"]["stage"]), (1, "config"), hello)
        self.assertIn("KEVALD_GPU_INDEX='1' names no device of CUDA_VISIBLE_DEVICES='3'", hello["error"]["message"])

    def test_fails_closed_without_the_confinement_library(self):
        rc, hello, err = self.hello("run", {"KEVALD_CONFINE_LIB": None})
        self.assertEqual((rc, hello["ok"], hello["error"]["stage"]), (1, False, "sandbox"))
        self.assertIn("KEVALD_CONFINE_LIB", hello["error"]["message"])
        rc, hello, err = self.hello("build", {"KEVALD_CONFINE_LIB": "/nonexistent/libkevald-confine.so"})
        self.assertEqual((rc, hello["error"]["stage"]), (1, "sandbox"))

    def test_no_sandbox_reports_it(self):
        rc, hello, err = self.hello("build", {"KEVALD_CONFINE_LIB": None}, ["--no-sandbox"])
        self.assertEqual((rc, hello["error"]["stage"]), (1, "import"))
        self.assertFalse(hello["layers"]["sandbox"]["active"])

    def test_config_errors(self):
        rc, hello, err = self.hello("build", {"KEVALD_TORCH_EXT_ROOT": "relative/dir"})
        self.assertEqual((rc, hello["error"]["stage"]), (1, "config"))
        self.assertIn("absolute", hello["error"]["message"])
        p = helpers.start("bogus")
        rc, err = helpers.finish(p)
        self.assertEqual(rc, 1)

    def test_hello_is_the_only_frame(self):
        p = helpers.start("build", {"KEVALD_TORCH_EXT_ROOT": self.tmp})
        p.stdin.write(frames.pack(frames.JOB, {"id": 1, "kind": "build", "build_dir": self.tmp}))
        p.stdin.flush()
        first = helpers.read_frame(p)
        second = helpers.read_frame(p)
        rc, _ = helpers.finish(p)
        self.assertEqual(first[0], frames.HELLO)
        self.assertIsNone(second)
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(json.dumps(first[1]))["ok"], False)


class BuildRolePath(unittest.TestCase):
    """The build role's PATH (kevald_torch.main.tool_path()): run wherever the worker's package
    imports, torch or not."""

    def test_tool_path(self):
        """The build role's PATH: pip's ninja package's binary folder first (found, not imported), then
        the interpreter's scripts folder and its own, then the system folders the sandbox lets it run
        programs from; nothing of the PATH it inherited (a host's /opt/gcc/bin: a compiler the sandbox
        refuses to run)."""
        import sysconfig
        from kevald_torch.main import SYSTEM_BIN, tool_path
        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "ninja")
            os.makedirs(os.path.join(pkg, "data", "bin"))
            os.makedirs(os.path.join(d, "opt-gcc-bin"))
            with open(os.path.join(pkg, "__init__.py"), "w") as f:
                f.write("raise SystemExit('imported')\n")
            sys.path.insert(0, d)
            old = os.environ.get("PATH")
            os.environ["PATH"] = os.path.join(d, "opt-gcc-bin") + ":/usr/bin"
            try:
                path = tool_path().split(":")
            finally:
                sys.path.remove(d)
                os.environ["PATH"] = old
        self.assertEqual(path[0], os.path.join(pkg, "data", "bin"))
        self.assertNotIn(os.path.join(d, "opt-gcc-bin"), path)
        self.assertEqual(path.count("/usr/bin"), 1)
        self.assertIn(os.path.dirname(sys.executable), path)
        if os.path.isdir(sysconfig.get_path("scripts")):
            self.assertIn(sysconfig.get_path("scripts"), path)
        self.assertEqual([p for p in path if p in SYSTEM_BIN], [p for p in SYSTEM_BIN if os.path.isdir(p)])
        own = [i for i, p in enumerate(path) if p not in SYSTEM_BIN]
        self.assertTrue(all(i < path.index(b) for i in own for b in SYSTEM_BIN if b in path), path)


if __name__ == "__main__":
    unittest.main()
