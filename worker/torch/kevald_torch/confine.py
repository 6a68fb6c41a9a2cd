"""
confine - libkevald-confine.so (sandbox/confine.c) through ctypes: the C
sandbox's layers, the watchdog, and every frame write.

The build role's per-job child narrows itself to its job's build folder with
narrow() (kevald_confine_narrow(): a second Landlock layer) before the job's
module runs.

Confine.load() opens the library named by KEVALD_CONFINE_LIB. Without it the
worker can only run unconfined (--no-sandbox); a Python lock and timer thread
then stand in for the C watchdog, which is weaker (a candidate spinning in C
with the interpreter's lock held stops that thread) and is only for tests and
benchmarks. With the library, the watchdog is a C thread that needs no lock of
the interpreter. Sandbox failures are returned, never raised: the caller puts
them in its HELLO and exits (fail closed).
"""
import ctypes
import json
import os
import threading

REPORT_BYTES = 64 << 10


class Confine:
    """The sandbox and the frame writer of one worker process."""

    def __init__(self, lib, out_fd):
        self.lib = lib
        self.out_fd = out_fd
        self.layers = {}
        self._lock = threading.Lock()      # the stand-in's (no library)
        self._timer = None
        if lib is not None:
            lib.kevald_confine_profile.argtypes = [ctypes.c_char_p]
            lib.kevald_confine_enter.argtypes = [
                ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
            lib.kevald_confine_lock.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
            lib.kevald_confine_narrow.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
            lib.kevald_confine_watchdog_start.argtypes = [ctypes.c_int]
            lib.kevald_confine_watchdog_arm.argtypes = [
                ctypes.c_char_p, ctypes.c_size_t, ctypes.c_longlong, ctypes.c_int]
            lib.kevald_confine_blame.argtypes = [ctypes.c_int]
            lib.kevald_confine_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.c_int]

    @classmethod
    def load(cls, path, out_fd):
        """A Confine over the library at @path (None or missing: without one).
        Returns (confine, error message or None)."""
        if not path:
            return cls(None, out_fd), "KEVALD_CONFINE_LIB is not set"
        try:
            return cls(ctypes.CDLL(path), out_fd), None
        except OSError as e:
            return cls(None, out_fd), f"loading {path!r}: {e}"

    def _report(self, buf):
        try:
            self.layers = json.loads(buf.value.decode() or "{}")
        except ValueError:
            self.layers = {"confine": {"active": False, "detail": "unreadable layer report"}}

    def enter(self, profile, read=(), execs=(), write=None, keep_fds=()):
        """Apply the pre-init layers of @profile ("torch-build", "torch-run",
        "none"). Returns None, or a message naming the failure."""
        if self.lib is None:
            return "no confinement library"
        num = self.lib.kevald_confine_profile(profile.encode())
        if num < 0:
            return f"unknown sandbox profile {profile!r}"
        buf = ctypes.create_string_buffer(REPORT_BYTES)
        keep = (ctypes.c_int * max(1, len(keep_fds)))(*keep_fds)
        r = self.lib.kevald_confine_enter(
            num, "\n".join(read).encode(), "\n".join(execs).encode(),
            write.encode() if write else None, keep, len(keep_fds), buf, REPORT_BYTES)
        self._report(buf)
        self.profile = num
        if r < 0:
            return f"sandbox_enter ({profile}): {os.strerror(-r)}"
        return None

    def lock(self):
        """Load the profile's system-call filter. Returns None or a message."""
        if self.lib is None:
            return "no confinement library"
        buf = ctypes.create_string_buffer(REPORT_BYTES)
        r = self.lib.kevald_confine_lock(self.profile, buf, REPORT_BYTES)
        self._report(buf)
        if r < 0:
            return f"sandbox_lock: {os.strerror(-r)}"
        return None

    def narrow(self, write):
        """In the build role's per-job child (one thread): confine this process
        to @write (the job's build folder, which must exist) as the only
        writable tree, and the rest of the artifact root unreadable. Returns
        (None or a message naming the failure, the narrowing's layer report)."""
        if self.lib is None:
            return "no confinement library", {}
        buf = ctypes.create_string_buffer(REPORT_BYTES)
        r = self.lib.kevald_confine_narrow(write.encode(), buf, REPORT_BYTES)
        try:
            layers = json.loads(buf.value.decode() or "{}")
        except ValueError:
            layers = {}
        if r < 0:
            detail = (layers.get("landlock") or {}).get("detail", "")
            return f"narrowing the sandbox to {write!r}: {os.strerror(-r)}" + (f" ({detail})" if detail else ""), \
                layers
        return None, layers

    def watchdog_start(self):
        """Start the watchdog thread. Returns None or a message."""
        if self.lib is None:
            return None
        r = self.lib.kevald_confine_watchdog_start(self.out_fd)
        return None if r >= 0 else f"starting the watchdog: {os.strerror(-r)}"

    def arm(self, frame, deadline_ms, kill_tree=False):
        """Past @deadline_ms from now, write @frame (a job's timeout RESULT)
        and exit 4; @kill_tree also kills every process descending from this
        one first (the build role's job child, its compilers, what its module
        started)."""
        if self.lib is not None:
            r = self.lib.kevald_confine_watchdog_arm(frame, len(frame), int(deadline_ms),
                                                     1 if kill_tree else 0)
            if r < 0:
                raise OSError(-r, "arming the watchdog")
            return
        with self._lock:
            if self._timer:
                self._timer.cancel()
            self._timer = threading.Timer(deadline_ms / 1000.0, self._fire, (frame, kill_tree))
            self._timer.daemon = True
            self._timer.name = "kevald-watchdog"
            self._timer.start()

    def _fire(self, frame, kill_tree):
        with self._lock:
            if self._timer is None:
                return
            _write_all(self.out_fd, frame)
            if kill_tree:
                kill_descendants()
            os._exit(4)

    def blame(self, on):
        """Say whether the candidate's code runs now: a system call the run
        role's filter forbids, made while @on, ends the worker with
        EXIT_FORBIDDEN (the candidate's call) rather than SIGSYS (the
        worker's). Nothing without the library (no filter either)."""
        if self.lib is not None:
            self.lib.kevald_confine_blame(1 if on else 0)

    def kill_descendants(self):
        """SIGKILL every process descending from this one (the library's walk,
        else kill_descendants() here). Returns how many were signalled."""
        if self.lib is not None:
            return self.lib.kevald_confine_kill_descendants()
        return kill_descendants()

    def send(self, frame, disarm=False):
        """Write one whole frame; @disarm for a job's RESULT (atomically with
        the write, the watchdog can no longer answer the job)."""
        if self.lib is not None:
            r = self.lib.kevald_confine_send(self.out_fd, frame, len(frame), 1 if disarm else 0)
            if r < 0:
                raise OSError(-r, "writing a frame")
            return
        with self._lock:
            _write_all(self.out_fd, frame)
            if disarm and self._timer:
                self._timer.cancel()
                self._timer = None


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _parents():
    """{pid: (parent, state)} of every process /proc shows but this one."""
    me, out = os.getpid(), {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read(512)
            fields = stat[stat.rindex(b")") + 2:].split()
            out[int(name)] = (int(fields[1]), fields[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


def kill_descendants():
    """SIGKILL every process descending from this one until none is left
    alive, as confine.c's kill_descendants() (the stand-in watchdog's and the
    worker's walk without the library). Returns how many were signalled."""
    import signal
    import time
    me, total = os.getpid(), 0
    for _ in range(64):
        procs = _parents()
        mine, grew = {p for p, (pp, _) in procs.items() if pp == me}, True
        while grew:
            more = {p for p, (pp, _) in procs.items() if pp in mine and p not in mine}
            grew = bool(more)
            mine |= more
        killed = 0
        for p in mine:
            if procs[p][1] == b"Z":
                continue
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        if not killed:
            break
        total += killed
        time.sleep(0.002)
    return total
