"""
torchworker-tritontools: the run role's compiler helper (kevald_torch/
tritontools.py), the real `kevald-torch --role tools` process confined by
libkevald-confine.so, over its socket pair, without Triton: the requests
that need no Triton (a tool's --version, a cache file put) work, every name
that could leave the cache is refused, a failure is an answer and the helper
goes on, the programs it runs drop root and cannot write outside its folder,
and it ends when the run worker's end closes. With Triton installed (the GPU
host), install() points Triton at it (tests/gpu: the Triton samples).
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
import uuid

import helpers
from kevald_torch import tritontools

LOADS = helpers.lib_loads()
BUILD_PY = helpers.nobody_python() if LOADS else None


def landlock_on():
    """Whether this kernel has Landlock: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    (system call 444 on x86_64 and arm64) answers its ABI version."""
    import ctypes
    try:
        return ctypes.CDLL(None, use_errno=True).syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)) >= 1
    except (OSError, AttributeError):
        return False


# A stand-in for the three Triton modules the helper's `module` request uses, as Triton 3.6 has them
# (triton/runtime/build.py's _build adds library_dirs, include_dirs, libraries and ccflags to cc's line).
STANDIN = {
    "triton/__init__.py": "",
    "triton/runtime/__init__.py": "",
    "triton/runtime/build.py": """
import os, shutil, subprocess, sysconfig
def platform_key():
    return "standin"
def _build(name, src, srcdir, library_dirs, include_dirs, libraries, ccflags):
    so = os.path.join(srcdir, name + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = [shutil.which("cc"), src, "-O3", "-shared", "-fPIC", "-o", so]
    cmd += ["-L" + d for d in library_dirs] + ["-l" + x for x in libraries] + ["-I" + d for d in include_dirs]
    subprocess.check_call(cmd + list(ccflags), stdout=subprocess.DEVNULL)
    return so
""",
    "triton/runtime/cache.py": """
import os
class _Cache:
    def __init__(self, key):
        self.dir = os.path.join(os.environ["TRITON_CACHE_DIR"], key)
    def get_file(self, filename):
        p = os.path.join(self.dir, filename)
        return p if os.path.exists(p) else None
    def put(self, data, filename, binary=True):
        os.makedirs(self.dir, exist_ok=True)
        p = os.path.join(self.dir, filename)
        with open(p, "wb") as f:
            f.write(data)
        return p
def get_cache_manager(key):
    return _Cache(key)
""",
    "triton/backends/__init__.py": "",
    "triton/backends/nvidia/__init__.py": "",
    # CudaUtils as Triton's: the source it asks compile_module_from_src for is driver.c changed (newer
    # Triton inlines a header there), and it then uses the module it gets
    "triton/backends/nvidia/driver.py": """
import os
include_dirs = []
libraries = []
def library_dirs():
    return []
def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None):
    raise RuntimeError("the stand-in does not import")
class CudaUtils:
    def __init__(self):
        with open(os.path.join(os.path.dirname(__file__), "driver.c")) as f:
            src = f.read().replace("/* launch.h */", "int kevald_inlined = 1;")
        mod = compile_module_from_src(src=src, name="cuda_utils", library_dirs=library_dirs(),
                                      include_dirs=include_dirs, libraries=libraries)
        self.load_binary = mod.load_binary
""",
    # Triton's CUDA utilities, which the helper builds before its first request
    "triton/backends/nvidia/driver.c": "int kevald_cuda_utils_standin = 7;\n/* launch.h */\n",
}


@unittest.skipUnless(LOADS and BUILD_PY, "libkevald-confine.so not loadable, or no python3 uid 65534 can run")
class Helper(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kevald-tools-test-")
        os.chmod(self.tmp, 0o755)
        self.folder = os.path.join(self.tmp, "v1.tools")
        self.bin = os.path.join(self.tmp, "bin")
        self.standin = os.path.join(self.tmp, "standin")
        for d in (self.folder, os.path.join(self.folder, "cache"), os.path.join(self.folder, "tmp"), self.bin):
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o755)
            if os.geteuid() == 0 and d.startswith(self.folder):
                os.chown(d, 65534, 65534)
        for rel, text in STANDIN.items():
            p = os.path.join(self.standin, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        for root, dirs, _ in os.walk(self.standin):
            for d in [root] + [os.path.join(root, x) for x in dirs]:
                os.chmod(d, 0o755)
        self.outside = os.path.join("/tmp", f"kevald-tools-outside-{uuid.uuid4().hex}")
        self.linger = f"{300 + (os.getpid() % 97)}.{uuid.uuid4().int % 10**6:06d}"   # a sleep only this test starts
        # Triton's ptxas, as the helper may run it (`version`): also the probe of what its programs may do
        self.ptxas = self.tool("ptxas", f"id -u\necho x > {self.outside} 2>/dev/null && echo wrote-outside\n"
                                        f"echo y > {self.folder}/tmp/inside && echo wrote-inside\n"
                                        f"setsid sleep {self.linger} > /dev/null 2>&1 < /dev/null &\n"
                                        "echo 'Cuda compilation tools, release 12.8, V12.8.93'\n")
        self.env = dict(helpers.LIB_ENV, PATH="/usr/bin:/bin", KEVALD_CONFINE_LIB=str(helpers.CONFINE_LIB),
                        KEVALD_PARENT_PID="1", KEVALD_TORCH_EXT_ROOT=self.folder,   # the supervisor's: spawn() sets ours
                        KEVALD_TOOLS_EXEC=self.bin, TMPDIR=os.path.join(self.folder, "tmp"),
                        TRITON_CACHE_DIR=os.path.join(self.folder, "cache"), KEVALD_LOG_LEVEL="info",
                        PYTHONPATH=self.standin, KEVALD_TOOLS_BYTES_MAX=str(1 << 20))
        self.chan, self.proc = tritontools.spawn([BUILD_PY, str(helpers.WORKER), "--role", "tools"],
                                                 self.folder, self.env)

    def tool(self, name, body):
        p = os.path.join(self.bin, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(p, 0o755)
        return p

    def tearDown(self):
        try:
            self.chan.conn.close()
            self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            subprocess.run(["pkill", "-KILL", "-f", f"sleep {self.linger}"], check=False)
            shutil.rmtree(self.tmp, ignore_errors=True)
            if os.path.exists(self.outside):
                os.unlink(self.outside)

    def lingering(self):
        out = subprocess.run(["pgrep", "-f", f"sleep {self.linger}"], capture_output=True, text=True).stdout
        return out.split()

    def test_version_put_and_refusals(self):
        head, out = self.chan.call("version", path=self.ptxas)
        self.assertEqual(head["rc"], 0)
        self.assertIn(b"release 12.8", out)
        not_ptxas = self.tool("cuobjdump", "echo 'release 12.8'\n")   # beneath Triton's tools, not its ptxas
        for path in ("/bin/true", os.path.join(self.folder, "ptxas"), "/usr/bin/sh", not_ptxas):
            with self.subTest(path=path):
                with self.assertRaisesRegex(tritontools.ToolError, "not a tool the helper runs"):
                    self.chan.call("version", path=path)

        head, _ = self.chan.call("put", b"\x7fELF launcher", key="ABCDEF234", filename="__triton_launcher.so")
        path = os.path.join(self.folder, "cache", "ABCDEF234", "__triton_launcher.so")
        self.assertEqual(head["path"], path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"\x7fELF launcher")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode) & 0o044, 0o044)   # the run role reads it
        self.assertEqual([n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp")], [])

        for key, filename in (("..", "x"), ("ABC", "../../../escape"), ("A/B", "x"), ("ABC", ".."), ("", "x")):
            with self.subTest(key=key, filename=filename):
                with self.assertRaisesRegex(tritontools.ToolError, "cache name"):
                    self.chan.call("put", b"x", key=key, filename=filename)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape")))
        # the folder's budget (1 MiB here): a put past it is refused and writes nothing
        self.chan.call("put", b"a" * (600 << 10), key="BIG", filename="one")
        with self.assertRaisesRegex(tritontools.ToolError, "budget"):
            self.chan.call("put", b"b" * (600 << 10), key="BIG", filename="two")
        self.assertEqual(os.listdir(os.path.join(self.folder, "cache", "BIG")), ["one"])

        with self.assertRaisesRegex(tritontools.ToolError, "unknown request"):
            self.chan.call("format-disk")
        with self.assertRaisesRegex(tritontools.ToolError, "module name"):
            self.chan.call("module", src="int x;", name="../evil")
        # still serving after every refusal
        head, _ = self.chan.call("version", path=self.ptxas)
        self.assertEqual(head["rc"], 0)

    def test_module_builds_with_tritons_own_flags(self):
        marker = os.path.join(self.folder, "tmp", "wrapper-ran")
        head, _ = self.chan.call("module", src="int kevald_standin = 42;\n", name="__triton_launcher",
                                 ccflags=["-wrapper", f"/bin/sh,-c,touch {marker}"], libraries=["evil"])
        path = head["path"]
        self.assertTrue(path.startswith(os.path.join(self.folder, "cache") + "/"), path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")
        self.assertFalse(os.path.exists(marker), "the request's ccflags reached the compiler")
        again, _ = self.chan.call("module", src="int kevald_standin = 42;\n", name="__triton_launcher")
        self.assertEqual(again["path"], path)   # the cache answers the same source

    def test_tritons_cuda_utilities_are_built_before_the_first_request(self):
        """prewarm(): the `module` every Triton candidate's first launch asks for (cuda_utils, its
        source as Triton's CudaUtils makes it from driver.c) is in the cache before any request, and
        that request is then answered from it."""
        import sysconfig
        self.chan.call("version", path=self.ptxas)   # served after the helper's own build
        name = "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX")
        cache = os.path.join(self.folder, "cache")
        built = [os.path.join(cache, k, name) for k in os.listdir(cache) if os.path.exists(os.path.join(cache, k, name))]
        self.assertEqual(len(built), 1, os.listdir(cache))
        with open(built[0], "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")
        before = os.stat(built[0]).st_mtime_ns
        with open(os.path.join(self.standin, "triton/backends/nvidia/driver.c")) as f:
            src = f.read().replace("/* launch.h */", "int kevald_inlined = 1;")   # what CudaUtils asks for
        head, _ = self.chan.call("module", src=src, name="cuda_utils")
        self.assertEqual(head["path"], built[0])
        self.assertEqual(os.stat(built[0]).st_mtime_ns, before)   # not built again

    def test_programs_it_runs_are_confined_and_end_with_the_request(self):
        head, out = self.chan.call("version", path=self.ptxas)
        lines = out.decode().split()
        if os.geteuid() == 0:
            self.assertEqual(lines[0], "65534")       # root dropped before anything runs
        self.assertIn("wrote-inside", lines)
        if landlock_on():
            self.assertNotIn("wrote-outside", lines)
            self.assertFalse(os.path.exists(self.outside))
        # what the request started in a session of its own is gone with its answer; TMPDIR emptied
        self.assertEqual(self.lingering(), [])
        self.assertEqual(os.listdir(os.path.join(self.folder, "tmp")), [])

    def test_ends_with_the_run_worker(self):
        self.chan.conn.close()
        self.assertEqual(self.proc.wait(timeout=20), 0)

    def test_a_helper_that_cannot_confine_itself_is_found_at_start(self):
        with self.assertRaisesRegex(OSError, "did not start"):
            tritontools.spawn([BUILD_PY, str(helpers.WORKER), "--role", "tools"], self.folder,
                              dict(self.env, KEVALD_CONFINE_LIB="/nonexistent/libkevald-confine.so"))


class RunSide(unittest.TestCase):
    def test_libcuda_dir_finds_the_library_by_ld_library_path(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "libcuda.so.1"), "w").close()
            old = os.environ.get("LD_LIBRARY_PATH")
            os.environ["LD_LIBRARY_PATH"] = f"relative/dir:{d}"
            try:
                self.assertEqual(tritontools.libcuda_dir(), os.path.realpath(d))
            finally:
                if old is None:
                    del os.environ["LD_LIBRARY_PATH"]
                else:
                    os.environ["LD_LIBRARY_PATH"] = old

    def test_a_failed_request_raises_with_the_helpers_message(self):
        import socket
        import threading
        a, b = socket.socketpair()
        # serve() here, in the test's process: it must leave the runner's TMPDIR alone
        keep = tempfile.NamedTemporaryFile(prefix="kevald-tools-keep-")

        def boom(args, payload):
            raise ValueError(f"no {args['what']} here ({len(payload)} bytes)")

        t = threading.Thread(target=tritontools.serve, args=(b.detach(), {"boom": boom}))
        t.start()
        chan = tritontools.Channel(a.detach())
        self.assertTrue(chan.wait_ready(10))
        with self.assertRaisesRegex(tritontools.ToolError, r"ValueError: no ptxas here \(3 bytes\)"):
            chan.call("boom", b"abc", what="ptxas")
        chan.conn.close()
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertTrue(os.path.exists(keep.name))
        keep.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
