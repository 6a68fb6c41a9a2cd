"""
The child protocol's frames (common/frame.h), written once for the tests'
stand-in workers: a 16-byte header (magic "KVF1", type, JSON length, blob
length; little-endian u32 each), then the JSON text and the blob.

Used by the stand-in GPU and torch workers (tests/pylib/standin_gpu_worker.py,
standin_torch_worker.py) and the hostile suite's forged compile worker
(tests/hostile/fake_worker.py). They run as children of `kevald serve`,
copied into a libexec folder with this file beside them (install() below), so
this module imports nothing of the project and only the standard library. The
stand-ins also share how they are put in place, read their knobs and log
(install_standin(), load_knobs(), log_line() at the end).

A reader takes a file descriptor (int, read with os.read) or a binary stream
(anything with .read(n), e.g. a Popen pipe). It returns None at a clean end
of input before a header and raises FrameError on a bad magic or a frame cut
short; it does not check LIMIT_FRAME_* (the stand-ins trust their
supervisor; the limits are the supervisor's to enforce on them).
"""
import json
import os
import shutil
import struct

MAGIC = 0x3146564B  # "KVF1"
HEADER = struct.Struct("<4I")
HELLO, JOB, RESULT, PROGRESS, SHUTDOWN = 1, 2, 3, 4, 5


class FrameError(ValueError):
    """A malformed frame: a bad magic, or input that ended inside a frame."""


def pack(ftype, body=b"", blob=b"", json_len=None, blob_len=None, magic=MAGIC):
    """One frame's bytes. @body is the JSON text (bytes) or an object to encode. The header's
    lengths are the true ones unless @json_len / @blob_len say otherwise, and @magic is "KVF1"
    unless given: the hostile tests forge frames so."""
    if not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    jl = len(body) if json_len is None else json_len
    bl = len(blob) if blob_len is None else blob_len
    return HEADER.pack(magic, ftype, jl, bl) + bytes(body) + bytes(blob)


def _read_exact(src, n):
    """@n bytes from @src, or None at a clean end of input before any byte."""
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(src, n - len(buf)) if isinstance(src, int) else src.read(n - len(buf))
        if not chunk:
            if not buf:
                return None
            raise FrameError(f"truncated frame ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def read_raw(src):
    """The next frame of @src as (type, JSON bytes, blob), or None at a clean end of input."""
    head = _read_exact(src, HEADER.size)
    if head is None:
        return None
    magic, ftype, jlen, blen = HEADER.unpack(head)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic:#x}")
    body = _read_exact(src, jlen) if jlen else b""
    blob = _read_exact(src, blen) if blen else b""
    if body is None or blob is None:
        raise FrameError("truncated frame (end of input after its header)")
    return ftype, body, blob


def read(src):
    """The next frame of @src as (type, decoded JSON, blob), or None at a clean end of input."""
    fr = read_raw(src)
    if fr is None:
        return None
    ftype, body, blob = fr
    try:
        obj = json.loads(body) if body else None
    except ValueError as e:
        raise FrameError(f"frame of type {ftype}: its JSON does not parse: {e}") from None
    return ftype, obj, blob


def write(fd, ftype, body, blob=b""):
    """Write one frame to the descriptor @fd, whole (os.write may write part of it)."""
    view = memoryview(pack(ftype, body, blob))
    while view:
        n = os.write(fd, view)
        view = view[n:]


def install(folder):
    """Copy this module into @folder, beside a stand-in worker copied there that imports it."""
    shutil.copy(os.path.abspath(__file__), os.path.join(folder, "frames.py"))


def install_standin(script, libexec, exe, knobs_name, knobs):
    """Copy the stand-in @script into the folder @libexec as the executable @exe, this module
    beside it, and @knobs (a dict, or None for {}) as JSON in @knobs_name there."""
    shutil.copy(os.path.abspath(script), os.path.join(libexec, exe))
    os.chmod(os.path.join(libexec, exe), 0o755)
    install(libexec)
    with open(os.path.join(libexec, knobs_name), "w") as f:
        f.write(json.dumps(knobs or {}))


def load_knobs(folder, knobs_name, defaults):
    """@defaults updated with the JSON object in @folder/@knobs_name, if there is one."""
    knobs = dict(defaults)
    try:
        with open(os.path.join(folder, knobs_name)) as f:
            knobs.update(json.load(f))
    except FileNotFoundError:
        pass
    return knobs


def log_line(path, ev):
    """Append @ev to the log @path as one JSON line, in one write (O_APPEND: several processes share it)."""
    line = (json.dumps(ev, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
