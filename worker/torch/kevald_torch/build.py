"""
build - the build role: a build JOB `{"id", "kind": "build", "deadline_ms",
"build_dir", "arch"?}` whose blob is a ModelNew source. The file is executed
as a fresh module with CUDA hidden and TORCH_EXTENSIONS_DIR = build_dir, so
that every load_inline / load it makes builds its extension there (once:
the run role imports the built library without building). ModelNew must be
an nn.Module subclass; it is not instantiated (no GPU here).

"arch" (sm_90a -> TORCH_CUDA_ARCH_LIST=9.0a) defaults to KEVALD_TORCH_ARCH,
else sm_90a.

RESULT: {"id", "ok", "error": null | "compile" | "import" | "no_model_new" |
"timeout", "log": the build's and the module's output, trimmed to
LOG_BYTES, "log_truncated", "wall_ms", "exiting": true}. The watchdog
answers "timeout" past deadline_ms and kills the compilers with the worker
(exit 4).

One JOB per process (issue 29): a module may patch what every later build
would use (torch.utils.cpp_extension, torch itself, sys.modules), so after
its RESULT ("exiting": true) the worker exits 0 and the dispatcher starts a
fresh one.
"""
import os
import subprocess
import sys
import tempfile
import time
import types

from . import frames
from .loop import EXIT_OK, BadJob, job_id

LOG_BYTES = 64 << 10
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
    if ext_root and os.path.commonpath([real, ext_root]) != ext_root:
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
        self.w.confine.arm(frames.pack(frames.RESULT, timeout), deadline_ms, kill_group=True)
        result = self.build(jid, blob, build_dir, arches)
        result["wall_ms"] = (time.monotonic() - t0) * 1000.0
        result["exiting"] = True
        self.w.send(frames.RESULT, result, disarm=True)
        return EXIT_OK   # one JOB per process: what the module patched ends with it

    def build(self, jid, blob, build_dir, arches):
        if len(blob) > SOURCE_BYTES_MAX:
            return {"id": jid, "ok": False, "error": "import", "log": "the source is too large",
                    "log_truncated": False}
        try:
            source = blob.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"id": jid, "ok": False, "error": "import", "log": f"the source is not UTF-8: {e}",
                    "log_truncated": False}
        os.makedirs(os.path.join(build_dir, "tmp"), exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
        os.environ["TMPDIR"] = os.path.join(build_dir, "tmp")
        tempfile.tempdir = os.environ["TMPDIR"]
        os.environ["TORCH_CUDA_ARCH_LIST"] = arches
        logpath = os.path.join(build_dir, "tmp", "build.log")
        error, exc = None, None
        saved = os.dup(2)
        try:
            with open(logpath, "w+b") as logf:
                sys.stderr.flush()
                os.dup2(logf.fileno(), 2)
                os.dup2(logf.fileno(), 1)
                try:
                    module = load_module(source, f"kevald_candidate_{jid}")
                    error = check_model_new(module)
                except BaseException as e:  # noqa: BLE001 (SystemExit too: the module's fault)
                    exc = e
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os.dup2(saved, 2)
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.close(null)
                logf.seek(0)
                out = logf.read(4 * LOG_BYTES).decode("utf-8", "replace")
        finally:
            os.close(saved)
        if exc is not None:
            error = classify(exc, out)
            out = (out + "\n" if out else "") + f"{type(exc).__name__}: {exc}"
        log, truncated = trim_log(out)
        return {"id": jid, "ok": error is None, "error": error, "log": log, "log_truncated": truncated}


def reset_extension_versions():
    """torch numbers a second load_inline of the same name in one process
    (name_v1): forget the names of earlier jobs, so that the build and run
    roles give a source's extensions the same names."""
    cpp = sys.modules.get("torch.utils.cpp_extension")
    versioner = getattr(cpp, "JIT_EXTENSION_VERSIONER", None)
    entries = getattr(versioner, "entries", None)
    if isinstance(entries, dict):
        entries.clear()


def load_module(source, name):
    """Execute @source as a new module named @name (not in sys.modules)."""
    reset_extension_versions()
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    code = compile(source, "model_new.py", "exec")
    exec(code, module.__dict__)   # noqa: S102 (the candidate runs confined)
    return module


def check_model_new(module):
    """None when @module defines ModelNew as an nn.Module subclass, else "no_model_new"."""
    import torch
    cls = module.__dict__.get("ModelNew")
    if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
        return None
    return "no_model_new"
