"""
torchworker-confine: libkevald-confine.so's C ABI loaded with ctypes in a
child Python, as kevald-torch loads it: after kevald_confine_lock() the run
profile refuses a socket (SIGSYS, named on stderr), answers exec and fork
with EPERM (Python's subprocess makes them with signals blocked), but allows
threads and reading; the build profile may execute a program and write its
write tree, not elsewhere, and gets no socket of any family (AF_UNIX
included: EACCES); kevald_confine_narrow() confines a single-threaded build
process to one folder of its write tree (a sibling folder and the rest of
the tree can be neither written nor read) and refuses a threaded one; a
build profile entered as root where uid 65534 may not write the write tree
fails (EPERM) instead of keeping root; the watchdog answers with the armed
frame and exit status 4 past the deadline, even while Python spins, and a
send with disarm stops it.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

import helpers

CHILD = textwrap.dedent("""
    import ctypes, json, os, socket, subprocess, sys, threading, time
    lib = ctypes.CDLL(sys.argv[1])
    profile, action, write = sys.argv[2], sys.argv[3], sys.argv[4] or None
    lib.kevald_confine_profile.argtypes = [ctypes.c_char_p]
    lib.kevald_confine_enter.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.kevald_confine_lock.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.kevald_confine_watchdog_arm.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_longlong, ctypes.c_int]
    lib.kevald_confine_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    lib.kevald_confine_narrow.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    out = {}
    def say(**kw):
        out.update(kw)
        os.write(1, (json.dumps(out) + "\\n").encode())
    if action in ("watchdog", "disarm"):
        assert lib.kevald_confine_watchdog_start(1) == 0
        assert lib.kevald_confine_watchdog_start(1) < 0      # once only
        assert lib.kevald_confine_watchdog_arm(b"TIMEOUT-FRAME\\n", 14, 300, 0) == 0
        if action == "disarm":
            assert lib.kevald_confine_send(1, b"RESULT-FRAME\\n", 13, 1) == 0
            time.sleep(0.8)
            sys.exit(0)
        t = time.monotonic()
        while time.monotonic() - t < 10:
            pass
        sys.exit(0)
    num = lib.kevald_confine_profile(profile.encode())
    assert lib.kevald_confine_profile(b"gpu") < 0
    buf = ctypes.create_string_buffer(65536)
    r = lib.kevald_confine_enter(num, ("/usr\\n" + sys.prefix).encode(), b"", write and write.encode(),
                                 None, 0, buf, 65536)
    say(enter=r, layers=json.loads(buf.value or b"{}"))
    if r < 0:
        sys.exit(10)
    r = lib.kevald_confine_lock(num, buf, 65536)
    say(lock=r, layers=json.loads(buf.value or b"{}"))
    if r < 0:
        sys.exit(11)
    def attempt(name, fn):
        try:
            fn()
            say(**{name: "ok"})
        except OSError as e:
            say(**{name: e.__class__.__name__})
    if action == "socket":
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    elif action == "exec":
        os.execv("/bin/true", ["true"])
    elif action == "fork":
        os.fork()
    elif action == "spawn":
        attempt("execv", lambda: os.execv("/bin/true", ["true"]))
        attempt("fork", lambda: os.fork() or os._exit(0))
        attempt("subprocess", lambda: subprocess.run(["/bin/true"]))
        attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
        attempt("waitpid", lambda: os.waitpid(-1, os.WNOHANG))   # reaping is allowed: no child, ECHILD
    elif action == "ptrace":
        ctypes.CDLL(None).ptrace(0, 0, 0, 0)
    elif action == "run-ok":
        th = threading.Thread(target=lambda: say(thread="ok"))
        th.start(); th.join()
        attempt("read_usr", lambda: open("/usr/lib/os-release").read())
        attempt("read_etc_hostname", lambda: open("/etc/hostname").read())
        attempt("write_tmp", lambda: open("/tmp/kevald-confine-test-denied", "w"))
    elif action == "build-ok":
        say(exec=subprocess.run(["/bin/true"]).returncode)
        attempt("write_tree", lambda: open(os.path.join(write, "obj.o"), "w").write("x"))
        attempt("write_outside", lambda: open("/tmp/kevald-confine-test-denied", "w"))
        attempt("socket_inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        attempt("socket_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
        attempt("socketpair_unix", lambda: socket.socketpair(socket.AF_UNIX))
    elif action in ("narrow", "narrow-threaded"):
        own, sibling = os.path.join(write, "own"), os.path.join(write, "sibling")
        stop = threading.Event()
        if action == "narrow-threaded":
            threading.Thread(target=stop.wait).start()
        r = lib.kevald_confine_narrow(own.encode(), buf, 65536)
        stop.set()
        say(narrow=r, narrowed=json.loads(buf.value or b"{}"))
        if r < 0:
            sys.exit(12)
        attempt("write_own", lambda: open(os.path.join(own, "obj.o"), "w").write("x"))
        attempt("read_own", lambda: open(os.path.join(own, "obj.o")).read())
        attempt("mkdir_own", lambda: os.makedirs(os.path.join(own, "ext", "build")))
        attempt("write_sibling", lambda: open(os.path.join(sibling, "obj.o"), "w").write("x"))
        attempt("replace_sibling", lambda: open(os.path.join(sibling, "ext.so"), "r+").write("x"))
        attempt("read_sibling", lambda: open(os.path.join(sibling, "ext.so")).read())
        attempt("list_sibling", lambda: os.listdir(sibling))
        attempt("write_root", lambda: open(os.path.join(write, "obj.o"), "w").write("x"))
        attempt("list_root", lambda: os.listdir(write))
        attempt("symlink_out", lambda: (os.symlink(sibling, os.path.join(own, "ln")),
                                        open(os.path.join(own, "ln", "ext.so")).read()))
        attempt("socket_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
        attempt("read_usr", lambda: open("/usr/lib/os-release").read())
        say(exec=subprocess.run(["/bin/true"]).returncode)
    say(done=True)
""")


def child(profile, action, write=""):
    # the build profile drops root or refuses (sandbox/proc.c): its Python must be readable by nobody
    python = BUILD_PY if profile == "torch-build" else sys.executable
    p = subprocess.run([python, "-c", CHILD, str(helpers.CONFINE_LIB), profile, action, write],
                       capture_output=True, timeout=30, env=dict(helpers.LIB_ENV, PATH="/usr/bin:/bin",
                                                                 KEVALD_PARENT_PID=str(os.getpid())))
    lines = [ln for ln in p.stdout.decode(errors="replace").splitlines() if ln.startswith("{")]
    return p.returncode, (json.loads(lines[-1]) if lines else {}), p.stdout.decode(errors="replace"), \
        p.stderr.decode(errors="replace")


LOADS = helpers.lib_loads()
need_lib = unittest.skipUnless(LOADS, "libkevald-confine.so cannot be loaded into Python here")
BUILD_PY = helpers.nobody_python() if LOADS else None
need_build_py = unittest.skipUnless(BUILD_PY, "run as root, and no python3 that uid 65534 can run here "
                                    "(the build profile drops root or refuses)")


@need_lib
class RunProfile(unittest.TestCase):
    def test_allowed(self):
        rc, out, _, err = child("torch-run", "run-ok")
        self.assertEqual(rc, 0, err)
        self.assertEqual((out["enter"], out["lock"], out["thread"], out["done"]), (0, 0, "ok", True))
        self.assertEqual(out["write_tmp"], "PermissionError")   # seccomp's EACCES, Landlock's too
        seccomp = out["layers"]["seccomp"]
        self.assertTrue(seccomp["active"])
        self.assertIn("torch-run allowlist", seccomp["detail"])
        if out["layers"]["landlock"]["active"]:
            self.assertEqual(out["read_usr"], "ok")
            self.assertEqual(out["read_etc_hostname"], "PermissionError")

    def test_forbidden_calls_end_the_process(self):
        rc, out, _, err = child("torch-run", "socket")
        self.assertEqual(out.get("lock"), 0, err)
        self.assertEqual(rc, -signal.SIGSYS, err)
        self.assertNotIn("done", out)
        self.assertIn("sandbox: seccomp: forbidden system call 41:", err)

    def test_no_process_answers_eperm(self):
        # Python's subprocess blocks every signal around vfork: a SIGSYS there could not reach
        # the filter's handler, and the worker would die as if it had failed (Triton's ptxas).
        rc, out, _, err = child("torch-run", "spawn")
        self.assertEqual(rc, 0, err)
        self.assertEqual((out["execv"], out["fork"], out["subprocess"], out["posix_spawn"], out["done"]),
                         ("PermissionError",) * 4 + (True,), err)
        self.assertEqual(out["waitpid"], "ChildProcessError", err)
        self.assertNotIn("forbidden system call", err)


@need_lib
@need_build_py
class BuildProfile(unittest.TestCase):
    def test_build(self):
        tree = tempfile.mkdtemp(prefix="kevald-confine-test-")
        os.chmod(tree, 0o777)
        rc, out, _, err = child("torch-build", "build-ok", tree)
        self.assertEqual(rc, 0, err)
        self.assertEqual((out["exec"], out["write_tree"], out["socket_inet"], out["socket_unix"],
                          out["socketpair_unix"]), (0, "ok", "PermissionError", "PermissionError", "PermissionError"))
        self.assertIn("torch-build denylist", out["layers"]["seccomp"]["detail"])
        if out["layers"]["landlock"]["active"]:
            self.assertEqual(out["write_outside"], "PermissionError")
            self.assertIn("writable only beneath " + os.path.realpath(tree), out["layers"]["landlock"]["detail"])
        self.assertTrue(os.path.exists(os.path.join(tree, "obj.o")))

    def test_narrowed_to_one_build_folder(self):
        """A job's child (kevald_confine_narrow()) writes and reads its own build folder only: not a
        sibling job's folder (whose extension the run role loads), nor the rest of the artifact root.
        The sibling is open to every user, so only the sandbox can refuse."""
        tree = tempfile.mkdtemp(prefix="kevald-confine-test-")
        os.chmod(tree, 0o777)
        for d in ("own", "sibling"):
            os.mkdir(os.path.join(tree, d))
            os.chmod(os.path.join(tree, d), 0o777)
        with open(os.path.join(tree, "sibling", "ext.so"), "w") as f:
            f.write("the other job's extension")
        os.chmod(os.path.join(tree, "sibling", "ext.so"), 0o666)
        rc, out, _, err = child("torch-build", "narrow", tree)
        self.assertEqual(rc, 0, err)
        self.assertEqual((out["narrow"], out["write_own"], out["read_own"], out["mkdir_own"], out["exec"]),
                         (0, "ok", "ok", "ok", 0), out)
        self.assertEqual(out["socket_unix"], "PermissionError")
        if not out["narrowed"]["landlock"]["active"]:
            self.skipTest("no Landlock in this kernel: " + out["narrowed"]["landlock"]["detail"])
        self.assertIn("writable only beneath " + os.path.realpath(os.path.join(tree, "own")),
                      out["narrowed"]["landlock"]["detail"])
        for k in ("write_sibling", "replace_sibling", "read_sibling", "list_sibling", "write_root", "list_root",
                  "symlink_out"):
            self.assertEqual(out[k], "PermissionError", (k, out))
        self.assertEqual(out["read_usr"], "ok")   # the read trees it entered with stay readable
        with open(os.path.join(tree, "sibling", "ext.so")) as f:
            self.assertEqual(f.read(), "the other job's extension")
        self.assertEqual(sorted(os.listdir(os.path.join(tree, "sibling"))), ["ext.so"])
        self.assertFalse(os.path.exists(os.path.join(tree, "obj.o")))
        self.assertTrue(os.path.exists(os.path.join(tree, "own", "obj.o")))

    def test_narrow_refuses_several_threads(self):
        tree = tempfile.mkdtemp(prefix="kevald-confine-test-")
        os.chmod(tree, 0o777)
        os.mkdir(os.path.join(tree, "own"))
        os.chmod(os.path.join(tree, "own"), 0o777)
        rc, out, _, err = child("torch-build", "narrow-threaded", tree)
        self.assertEqual((rc, out["narrow"]), (12, -16), err)   # -EBUSY: the job never runs
        self.assertIn("single thread", out["narrowed"]["landlock"]["detail"])

    @unittest.skipUnless(os.geteuid() == 0, "not root: the build profile's refusal to keep root cannot be seen")
    def test_root_refuses_a_root_owned_tree(self):
        """Started as root with a write tree only root may write, the build profile fails (-EPERM)
        rather than keep root for submitters' builds."""
        tree = tempfile.mkdtemp(prefix="kevald-confine-test-")
        os.chmod(tree, 0o755)
        rc, out, _, err = child("torch-build", "build-ok", tree)
        self.assertEqual((rc, out["enter"]), (10, -1), err)   # -EPERM
        uid = out["layers"]["uid"]
        self.assertFalse(uid["active"])
        self.assertIn("refused to build as root", uid["detail"])
        self.assertIn("uid 65534", uid["detail"])
        self.assertNotIn("landlock", out["layers"])   # nothing after the uid layer ran
        os.chown(tree, 65534, 65534)   # given to nobody (what kevald serve does as root): it drops
        rc, out, _, err = child("torch-build", "build-ok", tree)
        self.assertEqual((rc, out["enter"]), (0, 0), err)
        self.assertIn("root dropped to uid 65534", out["layers"]["uid"]["detail"])

    def test_ptrace_ends_the_process(self):
        tree = tempfile.mkdtemp(prefix="kevald-confine-test-")
        os.chmod(tree, 0o777)
        rc, out, _, err = child("torch-build", "ptrace", tree)
        self.assertEqual(rc, -signal.SIGSYS, err)
        self.assertIn("forbidden system call 101:", err)

    def test_needs_a_write_tree(self):
        rc, out, _, err = child("torch-build", "build-ok", "")
        self.assertEqual(rc, 10, err)
        self.assertEqual(out["enter"], -22)   # -EINVAL
        rc, out, _, err = child("torch-build", "build-ok", "/nonexistent/tree")
        self.assertEqual(rc, 10, err)
        if os.geteuid() == 0:   # nobody could not write it: refused before Landlock
            self.assertIn("refused to build as root", out["layers"]["uid"]["detail"])
        else:
            self.assertFalse(out["layers"].get("landlock", {}).get("active", True))


@need_lib
class Watchdog(unittest.TestCase):
    def test_fires_past_the_deadline(self):
        rc, _, stdout, err = child("none", "watchdog")
        self.assertEqual(rc, 4, err)
        self.assertEqual(stdout, "TIMEOUT-FRAME\n")

    def test_disarmed_by_the_result(self):
        rc, _, stdout, err = child("none", "disarm")
        self.assertEqual(rc, 0, err)
        self.assertEqual(stdout, "RESULT-FRAME\n")


if __name__ == "__main__":
    unittest.main()
