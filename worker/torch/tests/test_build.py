"""
torchworker-build: the real kevald-torch build role, sandboxed, driven over
its pipes as the dispatcher drives it, on the numpy stand-in for PyTorch
(faketorch/). The job's module runs in a child confined to the job's
build_dir (a second Landlock layer): it writes and reads its own folder, but
neither writes nor reads a sibling build folder (another source's extension,
which the run role loads) nor the rest of the artifact root; it gets no
AF_UNIX socket; it cannot reach the supervisor's frame pipe. A child that
exits without an answer or is killed is a failed build that says so; past the
deadline the watchdog answers "timeout" and kills the child and what it
started, also what it orphaned in a session of its own (the worker is its
descendants' subreaper). A build worker started as root whose artifact root only root may
write refuses to start (HELLO ok false, stage "sandbox"). Skipped where no
python3 with numpy can run the worker.
"""
import os
import tempfile
import time
import unittest

import helpers
from kevald_torch import frames

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch")
FAKE_NINJA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakeninja")   # pip's ninja package
MODEL = "import torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n"


def numpy_python():
    """A python3 with numpy that the build role can run (as root it drops to uid 65534)."""
    import subprocess
    for py in ("/usr/bin/python3", "python3"):
        try:
            if subprocess.run([py, "-c", "import numpy"], capture_output=True, timeout=20).returncode != 0:
                continue
        except (OSError, subprocess.TimeoutExpired):
            continue
        if not helpers.lib_loads(py):
            continue
        if os.geteuid() == 0 and not helpers._runs_as_nobody(py):
            continue
        return py
    return None


PY = numpy_python()


def attempt(name, expr):
    """Source lines that print "<name>: ok" or "<name>: <the exception's class>"."""
    return (f"try:\n    {expr}\n    print({name!r} + ': ok', flush=True)\n"
            f"except OSError as e:\n    print({name!r} + ': ' + type(e).__name__, flush=True)\n")


def gone(pid, timeout=10.0):
    """Whether @pid ends (or is a zombie) within @timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@unittest.skipIf(PY is None, "no python3 with numpy that can run the build role here")
class BuildRole(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="kevald-torch-build-")
        os.chmod(self.root, 0o777)   # nobody may write it: a root-started worker drops to 65534
        # a sibling job's build: open to every user, so only the sandbox can refuse the module
        self.sibling = os.path.join(self.root, "sibling")
        os.mkdir(self.sibling)
        os.chmod(self.sibling, 0o777)
        self.ext = os.path.join(self.sibling, "ext.so")
        with open(self.ext, "w") as f:
            f.write("the other job's extension")
        os.chmod(self.ext, 0o666)

    def start(self, root=None, pythonpath=FAKE):
        helpers.PYTHON = PY
        try:
            p = helpers.start("build", {"KEVALD_TORCH_EXT_ROOT": root or self.root, "PYTHONPATH": pythonpath})
        finally:
            helpers.PYTHON = None
        fr = helpers.read_frame(p)
        self.assertIsNotNone(fr, "no HELLO")
        return p, fr[1]

    def job(self, source, name="job", deadline_ms=20000, status=0, pythonpath=FAKE):
        """The RESULT of building @source in root/@name on a fresh worker, which then exits @status."""
        p, hello = self.start(pythonpath=pythonpath)
        self.assertTrue(hello["ok"], hello)
        self.landlock = hello["layers"]["landlock"]["active"]
        p.stdin.write(frames.pack(frames.JOB, {"id": 1, "kind": "build", "deadline_ms": deadline_ms,
                                               "build_dir": os.path.join(self.root, name)}, source.encode()))
        p.stdin.flush()
        fr = helpers.read_frame(p)
        rc, err = helpers.finish(p)
        self.assertIsNotNone(fr, err)
        self.assertEqual(fr[0], frames.RESULT, fr)
        self.assertEqual(rc, status, err)
        return fr[1]

    def test_module_reaches_only_its_own_build_dir(self):
        own = os.path.join(self.root, "job")
        src = ("import os, socket\nprint('hello from the module', flush=True)\n" +
               attempt("write_own", f"open({os.path.join(own, 'obj.o')!r}, 'w').write('x')") +
               attempt("read_own", f"open({os.path.join(own, 'obj.o')!r}).read()") +
               attempt("write_sibling", f"open({os.path.join(self.sibling, 'obj.o')!r}, 'w').write('x')") +
               attempt("replace_sibling", f"open({self.ext!r}, 'r+').write('evil')") +
               attempt("read_sibling", f"open({self.ext!r}).read()") +
               attempt("list_root", f"os.listdir({self.root!r})") +
               attempt("write_root", f"open({os.path.join(self.root, 'x')!r}, 'w').write('x')") +
               attempt("unix_socket", "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)") +
               "print('tmp:', os.environ['TMPDIR'], os.environ['XDG_CACHE_HOME'], os.environ['TORCH_EXTENSIONS_DIR'])\n"
               + MODEL)
        res = self.job(src)
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        log = res["log"]
        for line in ("hello from the module", "write_own: ok", "read_own: ok", "unix_socket: PermissionError",
                     f"tmp: {own}/tmp {own}/tmp/cache {own}"):
            self.assertIn(line, log)
        if self.landlock:
            for k in ("write_sibling", "replace_sibling", "read_sibling", "list_root", "write_root"):
                self.assertIn(f"{k}: PermissionError", log)
        with open(self.ext) as f:
            self.assertEqual(f.read(), "the other job's extension")
        self.assertEqual(os.listdir(self.sibling), ["ext.so"])
        self.assertEqual(sorted(set(os.listdir(self.root)) - {"tmp"}), ["job", "sibling"])   # tmp: the worker's
        self.assertTrue(os.path.exists(os.path.join(own, "obj.o")))

    def test_ninja_of_the_interpreters_packages_runs(self):
        """The ninja binary of pip's ninja package (where a virtual environment's torch has it) is on
        the build role's PATH and may run in its sandbox: torch's load_inline runs `ninja` by PATH, and
        with the server's PATH alone (/usr/bin:/bin) every load_inline on the GPU host failed "Ninja is
        required to load C++ extensions"."""
        src = ("import os, subprocess\n"
               "print(subprocess.run(['ninja', '--version'], capture_output=True, text=True).stdout, flush=True)\n"
               "print('first on PATH:', os.environ['PATH'].split(':')[0], flush=True)\n" + MODEL)
        res = self.job(src, "ninja", pythonpath=FAKE + ":" + FAKE_NINJA)
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        self.assertIn("fake ninja --version", res["log"])
        self.assertIn(f"first on PATH: {os.path.join(FAKE_NINJA, 'ninja', 'data', 'bin')}", res["log"])

    def test_the_module_source_is_there_for_inspect(self):
        """inspect.getsource() finds a function the module defines, as Triton's @triton.jit needs (before:
        "@jit functions should be defined in a Python file", an import failure of every Triton sample)."""
        src = ("import inspect\nx = 1\n\x0c\n# a comment with a line separator: \u2028 (str.splitlines() splits there)\n"
               "def kernel(x):\n    return x + 1\n"
               "print('source:', inspect.getsource(kernel).splitlines()[1].strip(), flush=True)\n" + MODEL)
        res = self.job(src, "inspect")
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        self.assertIn("source: return x + 1", res["log"])

    def test_frame_pipe_out_of_reach(self):
        """A forged RESULT written to every descriptor above 2 reaches the module's own answer and
        log, not the supervisor: the frame descriptors are closed in the child."""
        forged = frames.pack(frames.RESULT, {"id": 1, "ok": True, "error": None, "log": "forged",
                                             "log_truncated": False, "wall_ms": 1, "exiting": True})
        src = (f"import os\nfor fd in range(3, 1024):\n    try:\n        os.write(fd, {forged!r})\n"
               "    except OSError:\n        pass\n" + MODEL)
        res = self.job(src, "forger")
        self.assertNotEqual(res["log"], "forged")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)   # its own answer spoilt
        self.assertIn("the build process exited with status 0 with a malformed answer", res["log"])

    def test_an_answer_nested_too_deep_is_malformed(self):
        """An answer the JSON parser cannot take (nesting past Python's recursion limit) spoils
        only the module's own build: a RESULT, the worker's normal exit."""
        src = ("import os\nfor fd in range(3, 1024):\n    try:\n        os.write(fd, b'[' * 5000)\n"
               "    except OSError:\n        pass\nos._exit(0)\n")
        res = self.job(src, "deep")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)
        self.assertIn("the build process exited with status 0 with a malformed answer", res["log"])

    def test_child_without_an_answer(self):
        res = self.job("import os\nprint('about to leave', flush=True)\nos._exit(0)\n" + MODEL, "quits")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)
        self.assertIn("about to leave", res["log"])
        self.assertIn("the build process exited with status 0 without an answer", res["log"])
        res = self.job("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + MODEL, "killed")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)
        self.assertIn("the build process was killed by SIGKILL without an answer", res["log"])

    def test_errors_still_classified(self):
        res = self.job("from torch.utils.cpp_extension import load_inline\nload_inline('x', '')\n" + MODEL, "ext")
        self.assertEqual((res["ok"], res["error"]), (False, "compile"), res)
        self.assertIn("Error building extension", res["log"])
        res = self.job("def (:\n", "syntax")
        self.assertEqual((res["ok"], res["error"]), (False, "import"), res)
        self.assertIn("SyntaxError", res["log"])
        res = self.job("X = 1\n", "nomodel")
        self.assertEqual((res["ok"], res["error"]), (False, "no_model_new"), res)

    def test_watchdog_kills_the_child_and_what_it_started(self):
        own = os.path.join(self.root, "hang")
        src = ("import os, subprocess\np = subprocess.Popen(['sleep', '60'])\n"
               f"open({os.path.join(own, 'pids')!r}, 'w').write(f'{{os.getpid()}} {{p.pid}}')\n"
               "while True:\n    pass\n")
        res = self.job(src, "hang", deadline_ms=10000, status=4)   # time to write the pids on a slow, loaded host
        self.assertEqual((res["ok"], res["error"]), (False, "timeout"), res)
        with open(os.path.join(own, "pids")) as f:
            pids = [int(x) for x in f.read().split()]
        self.assertEqual(len(pids), 2)
        for pid in pids:
            self.assertTrue(gone(pid), f"process {pid} outlived the worker's timeout")

    def test_what_the_module_leaves_running_ends_with_its_build(self):
        own = os.path.join(self.root, "leaves")
        src = ("import os, subprocess\np = subprocess.Popen(['sleep', '60'])\n"
               f"open({os.path.join(own, 'pid')!r}, 'w').write(str(p.pid))\n" + MODEL)
        res = self.job(src, "leaves")
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        with open(os.path.join(own, "pid")) as f:
            pid = int(f.read())
        self.assertTrue(gone(pid), f"process {pid} outlived its build")

    def orphan_source(self, name, tail):
        """A module that starts a `sleep 60` in a session of its own and orphans it (its shell
        exits), writing the sleep's pid to its folder's "pid", then runs @tail."""
        pidfile = os.path.join(self.root, name, "pid")
        return ("import subprocess\n"
                f"subprocess.run(['sh', '-c', 'sleep 60 & echo $! > {pidfile}'], start_new_session=True)\n"
                + tail), pidfile

    def test_an_orphan_in_its_own_session_ends_with_the_build(self):
        src, pidfile = self.orphan_source("orphan", MODEL)
        res = self.job(src, "orphan")
        self.assertEqual((res["ok"], res["error"]), (True, None), res)
        with open(pidfile) as f:
            pid = int(f.read())
        self.assertTrue(gone(pid), f"process {pid} (its own session, orphaned) outlived its build")

    def test_an_orphan_in_its_own_session_ends_at_the_timeout(self):
        src, pidfile = self.orphan_source("orphan_hang", "while True:\n    pass\n")
        res = self.job(src, "orphan_hang", deadline_ms=10000, status=4)   # time to write the pid on a loaded host
        self.assertEqual((res["ok"], res["error"]), (False, "timeout"), res)
        with open(pidfile) as f:
            pid = int(f.read())
        self.assertTrue(gone(pid), f"process {pid} (its own session, orphaned) outlived the worker's timeout")

    def test_build_dir_must_be_below_the_root(self):
        p, hello = self.start()
        self.assertTrue(hello["ok"], hello)
        p.stdin.write(frames.pack(frames.JOB, {"id": 1, "kind": "build", "build_dir": self.root}))
        p.stdin.flush()
        self.assertIsNone(helpers.read_frame(p))
        rc, err = helpers.finish(p)
        self.assertEqual(rc, 2, err)

    @unittest.skipUnless(os.geteuid() == 0, "not root: a root-started build worker cannot be seen")
    def test_root_refuses_a_root_owned_artifact_root(self):
        root = tempfile.mkdtemp(prefix="kevald-torch-build-root-")
        os.chmod(root, 0o755)   # root's: nobody may not write it
        p, hello = self.start(root)
        rc, err = helpers.finish(p)
        self.assertEqual((hello["ok"], hello["error"]["stage"], rc), (False, "sandbox", 1), hello)
        self.assertIn("refused to build as root", hello["error"]["message"])
        self.assertIn("65534", hello["error"]["message"])
        self.assertIsNone(hello["torch"])   # nothing past the sandbox ran


if __name__ == "__main__":
    unittest.main()
