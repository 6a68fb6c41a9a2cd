"""
build - the build role: a build JOB `{"id", "kind": "build", "deadline_ms",
"build_dir", "arch"?}` whose blob is a ModelNew source. The file is executed
as a fresh module with CUDA hidden and TORCH_EXTENSIONS_DIR = build_dir, so
that every load_inline / load it makes builds its extension there (once:
the run role imports the built library without building). ModelNew must be
an nn.Module subclass; it is not instantiated (no GPU here).

Theory of operation. The worker's sandbox may write the whole artifact root
(it makes each job's build_dir); the module must reach only its own job's.
So the worker (the parent) makes build_dir and build_dir/tmp and an unlinked
log file there, then forks a child. The child, single-threaded (the
watchdog thread stays in the parent), closes the frame descriptors, adds a
second Landlock layer (Confine.narrow(): the same read and exec trees, the
one write tree build_dir; nothing else of the artifact root readable), and
only then writes b"N" to its answer pipe and runs the module with
TORCH_EXTENSIONS_DIR, TMPDIR, tempfile.tempdir and XDG_CACHE_HOME beneath
build_dir and its stdout and stderr on the log file. Its answer, a JSON
object {"error", "exception"}, follows the b"N"; a narrowing that fails is
b"F" and the reason, written before any of the module's code ran, so it is
the worker's fault (logged, exit 1 without a RESULT: the supervisor retries
elsewhere) and cannot be forged by a module. The parent reads the answer
(at most ANSWER_BYTES) to its end, reaps the child, kills every process
still descending from the worker (what the module left running; the worker
is their subreaper, so one that went to a session or process group of its
own and was orphaned is still found), reads the log from its own descriptor
(never by a path the module could have replaced), and sends the RESULT. A
child killed by a signal, or that exits without an answer or with a
malformed one, is an "import" failure whose log says so. The watchdog,
armed in the parent with kill_tree, kills the child, its compilers and what
they started past the deadline.

"arch" (sm_90a -> TORCH_CUDA_ARCH_LIST=9.0a) defaults to KEVALD_TORCH_ARCH,
else sm_90a.

RESULT: {"id", "ok", "error": null | "compile" | "import" | "no_model_new" |
"timeout", "log": the build's and the module's output, trimmed to
LOG_BYTES, "log_truncated", "wall_ms", "exiting": false}. The watchdog
answers "timeout" ("exiting": true) past deadline_ms and kills the
compilers with the worker (exit 4).

A worker serves JOB after JOB. A module may patch what every later build
would use (torch.utils.cpp_extension, torch itself, sys.modules), but it
runs only in its job's child, whose memory is its own: the worker never
executes a module's code, the child cannot reach the worker's memory (the
worker is not dumpable, and the profile's filter refuses ptrace and
process_vm_writev), and everything the child started is killed before the
RESULT. So the next JOB's child is forked from the same worker as the
first was, and pays no `import torch` of its own: on the H100 host that
import was most of a build worker's 3-20 s start, once per build when
each build had a fresh worker.
"""
import ctypes
import io
import json
import linecache
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
import warnings

from . import frames
from .loop import EXIT_FAILED, BadJob, job_id

LOG_BYTES = 64 << 10
PR_SET_PDEATHSIG = 1
ANSWER_BYTES = LOG_BYTES + (4 << 10)   # the child's answer: its error kind and the exception's text
ERRORS = (None, "compile", "import", "no_model_new")   # what a child may answer
DEADLINE_MS_MAX = 600000       # a build JOB's deadline_ms is at most this
DEADLINE_MS_DEFAULT = 300000
SOURCE_BYTES_MAX = 1 << 20     # as LIMIT_SOURCE_BYTES: the server checked it first
# The GPUs kevald runs on (H100, H200). Without a GPU in the build role torch
# cannot ask the device, so a JOB's "arch" (the run worker's HELLO arch)
# decides, else KEVALD_TORCH_ARCH, else this.
DEFAULT_ARCH = "sm_90a"


def trim_log(text, limit=LOG_BYTES):
    """@text cut to @limit bytes of UTF-8: the first errors matter most, so the
    head is kept and a last line says how much was dropped.
    Returns (text, truncated)."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return raw.decode("utf-8", "replace"), False
    note = f"\n... ({len(raw) - limit} more bytes)"
    head = raw[:limit - len(note.encode()) - 16].decode("utf-8", "ignore")
    return head + note, True


def arch_list(arch):
    """TORCH_CUDA_ARCH_LIST for a kevald arch name ("sm_90a" -> "9.0a")."""
    if not isinstance(arch, str) or not arch.startswith("sm_") or not arch[3:5].isdigit():
        return None
    digits = arch[3:].rstrip("af")
    if not digits.isdigit() or len(digits) < 2:
        return None
    return f"{digits[:-1]}.{digits[-1]}" + arch[3 + len(digits):]


def parse_build(job, ext_root):
    """The build JOB's fields, checked: (id, deadline_ms, build_dir, arch list).
    Raises BadJob."""
    jid = job_id(job)
    if job.get("kind", "build") != "build":
        raise BadJob("a build worker was sent a JOB of another kind")
    dl = job.get("deadline_ms", DEADLINE_MS_DEFAULT)
    if not isinstance(dl, (int, float)) or isinstance(dl, bool) or dl <= 0:
        raise BadJob("deadline_ms is not a positive number")
    bd = job.get("build_dir")
    if not isinstance(bd, str) or not os.path.isabs(bd) or "\0" in bd:
        raise BadJob("build_dir is not an absolute path")
    real = os.path.realpath(bd)
    if ext_root and (real == ext_root or os.path.commonpath([real, ext_root]) != ext_root):
        raise BadJob(f"build_dir {bd!r} is not below the artifact root")
    arch = job.get("arch") or os.environ.get("KEVALD_TORCH_ARCH") or DEFAULT_ARCH
    arches = arch_list(arch)
    if arches is None:
        raise BadJob(f"arch {arch!r} is not an sm_NN[N][a|f] name")
    return jid, min(float(dl), DEADLINE_MS_MAX), real, arches


def classify(exc, log):
    """The RESULT's error for an exception the module raised while building
    or importing: "compile" when the extension's build failed, else "import"."""
    text = f"{exc}\n{log}"
    if isinstance(exc, subprocess.CalledProcessError) or "Error building extension" in text \
            or "error: command" in text or "ninja: build stopped" in text:
        return "compile"
    return "import"


class Builder:
    """The build role's JOB handler."""

    def __init__(self, worker):
        self.w = worker

    def handle(self, job, blob):
        t0 = time.monotonic()
        jid, deadline_ms, build_dir, arches = parse_build(job, self.w.ext_root)
        timeout = {"id": jid, "ok": False, "error": "timeout",
                   "log": f"the build exceeded its {deadline_ms / 1000:g} s limit", "log_truncated": False,
                   "wall_ms": deadline_ms, "exiting": True}
        self.w.confine.arm(frames.pack(frames.RESULT, timeout), deadline_ms, kill_tree=True)
        result = self.build(jid, blob, build_dir, arches)
        if result is None:
            return EXIT_FAILED   # the worker's own fault, logged: no RESULT, the supervisor retries
        result["wall_ms"] = (time.monotonic() - t0) * 1000.0
        result["exiting"] = False
        self.w.send(frames.RESULT, result, disarm=True)
        return None   # the next JOB: what the module patched ended with its child

    def build(self, jid, blob, build_dir, arches):
        """The RESULT of building @blob in @build_dir (without wall_ms and
        exiting), or None when the worker failed (logged)."""
        if len(blob) > SOURCE_BYTES_MAX:
            return {"id": jid, "ok": False, "error": "import", "log": "the source is too large",
                    "log_truncated": False}
        try:
            source = blob.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"id": jid, "ok": False, "error": "import", "log": f"the source is not UTF-8: {e}",
                    "log_truncated": False}
        log = logging.getLogger("kevald-torch")
        try:
            os.makedirs(os.path.join(build_dir, "tmp"), exist_ok=True)
            logf = tempfile.TemporaryFile(dir=os.path.join(build_dir, "tmp"))
        except OSError as e:
            log.error("torch-build: preparing the build folder %r: %s", build_dir, e)
            return None
        with logf:
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                parent = os.getpid()
                r, w = os.pipe()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)   # fork with the watchdog's thread: ours
                    pid = os.fork()
            except OSError as e:
                log.error("torch-build: starting the job's child: %s", e)
                return None
            if pid == 0:
                os.close(r)
                self.child(parent, w, logf.fileno(), source, jid, build_dir, arches)   # never returns
            os.close(w)
            answer = read_answer(r)
            os.close(r)
            _, status = os.waitpid(pid, 0)
            self.w.confine.kill_descendants()   # what the module started and left running ends with its build
            out = os.pread(logf.fileno(), 4 * LOG_BYTES, 0).decode("utf-8", "replace")
        if answer[:1] == b"F":
            log.error("torch-build: the job's child could not be confined: %s",
                      answer[1:].decode("utf-8", "replace"))
            return None
        error, exc = judge_answer(answer, status)
        if exc:
            out = (out + "\n" if out else "") + exc
        log_text, truncated = trim_log(out)
        return {"id": jid, "ok": error is None, "error": error, "log": log_text, "log_truncated": truncated}

    def child(self, parent, w, logfd, source, jid, build_dir, arches):
        """The forked child of @parent: narrow the sandbox to @build_dir, run
        the module with its output on @logfd, answer on @w. Never returns."""
        code = 1
        try:
            try:
                die_with_parent(parent)
                for fd in (self.w.in_fd, self.w.out_fd):   # the frames are the parent's alone
                    os.close(fd)
                err = self.w.confine.narrow(build_dir)[0] if self.w.sandbox else None
            except BaseException as e:  # noqa: BLE001 (before the module: the worker's fault)
                err = f"preparing the job's process: {type(e).__name__}: {e}"
            if err:
                write_all(w, b"F" + err.encode("utf-8", "replace"))
                os._exit(1)
            write_all(w, b"N")
            scratch = os.path.join(build_dir, "tmp")
            os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
            os.environ["TMPDIR"] = scratch
            os.environ["XDG_CACHE_HOME"] = os.path.join(scratch, "cache")
            tempfile.tempdir = scratch
            os.environ["TORCH_CUDA_ARCH_LIST"] = arches
            os.dup2(logfd, 1)
            os.dup2(logfd, 2)
            error, exc = None, None
            try:
                module = load_module(source, f"kevald_candidate_{jid}")
                error = check_model_new(module)
            except BaseException as e:  # noqa: BLE001 (SystemExit too: the module's fault)
                exc = e
            text = None
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001 (the module may have replaced them)
                pass
            if exc is not None:
                try:
                    text = f"{type(exc).__name__}: {exc}"
                    error = classify(exc, os.pread(logfd, 4 * LOG_BYTES, 0).decode("utf-8", "replace"))
                except BaseException:  # noqa: BLE001 (an exception whose text raises)
                    text, error = f"{type(exc).__name__}: (its text could not be read)", "import"
                text, _ = trim_log(text)
            write_all(w, json.dumps({"error": error, "exception": text}).encode())
            code = 0
        except BaseException:  # noqa: BLE001 (no answer: the parent says so)
            pass
        finally:
            os._exit(code)


def die_with_parent(parent):
    """Be SIGKILLed when the worker @parent dies (PR_SET_PDEATHSIG; fork does
    not inherit it), and end now if it already has: a module cannot outlive
    a worker it ended."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_PDEATHSIG")
    if os.getppid() != parent:
        os._exit(1)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_answer(fd):
    """What the child wrote on @fd up to its end, or the first ANSWER_BYTES + 1
    bytes (too long: malformed)."""
    chunks, n = [], 0
    while n <= ANSWER_BYTES:
        b = os.read(fd, 65536)
        if not b:
            break
        chunks.append(b)
        n += len(b)
    return b"".join(chunks)[:ANSWER_BYTES + 1]


def judge_answer(answer, status):
    """(error, the text appended to the log) of a child's @answer (b"N" and
    its JSON) and its wait @status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        how = f"the build process was killed by {name}"
    else:
        how = f"the build process exited with status {os.WEXITSTATUS(status)}"
    if answer[:1] != b"N" or len(answer) <= 1:
        return "import", f"{how} without an answer"
    try:
        obj = json.loads(answer[1:].decode("utf-8")) if len(answer) <= ANSWER_BYTES else None
    except Exception:  # noqa: BLE001 (the module may have written anything there: "[" * 5000 is a RecursionError)
        obj = None
    if not isinstance(obj, dict) or obj.get("error") not in ERRORS or \
            not isinstance(obj.get("exception"), (str, type(None))):
        return "import", f"{how} with a malformed answer"
    if os.WIFSIGNALED(status):
        return "import", f"{how} after its answer"
    return obj["error"], obj["exception"]


def reset_extension_versions():
    """torch numbers a second load_inline of the same name in one process
    (name_v1): forget the names of earlier jobs, so that the build and run
    roles give a source's extensions the same names."""
    cpp = sys.modules.get("torch.utils.cpp_extension")
    versioner = getattr(cpp, "JIT_EXTENSION_VERSIONER", None)
    entries = getattr(versioner, "entries", None)
    if isinstance(entries, dict):
        entries.clear()


def load_module(source, name, filename="model_new.py"):
    """Execute @source (text, or UTF-8 bytes as the run JOB's blob holds it)
    as a new module named @name (not in sys.modules), its
    code named @filename. The source is in linecache under @filename, as a
    file's would be, so that inspect.getsource() finds the functions it
    defines: Triton's @triton.jit reads its function's source (without it:
    "@jit functions should be defined in a Python file"), and tracebacks
    show the lines. Its lines are split as the compiler counts them (\n,
    \r\n, \r), not by str.splitlines(), which also splits at a form feed
    or U+2028 and would shift every later line."""
    reset_extension_versions()
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    text = source.decode("utf-8", "replace") if isinstance(source, (bytes, bytearray)) else source
    linecache.cache[filename] = (len(text), None, io.StringIO(text, newline=None).readlines(), filename)
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)   # noqa: S102 (the candidate runs confined)
    return module


def check_model_new(module):
    """None when @module defines ModelNew as an nn.Module subclass, else "no_model_new"."""
    import torch
    cls = module.__dict__.get("ModelNew")
    if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
        return None
    return "no_model_new"
