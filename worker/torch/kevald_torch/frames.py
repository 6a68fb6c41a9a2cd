"""
frames - the child protocol's frames (common/frame.h): a 16-byte header
(magic "KVF1", type, JSON length, blob length; little-endian u32 each), then
the JSON text and the blob. A frame from the supervisor is bounded by
LIMIT_FRAME_JSON_BYTES and LIMIT_FRAME_BLOB_BYTES (common/limits.h; the
values are repeated here, and tests/test_frames.py reads limits.h to keep
them equal).
"""
import json
import math
import os
import struct

MAGIC = 0x3146564B  # "KVF1"
HEADER = struct.Struct("<4I")
HELLO, JOB, RESULT, PROGRESS, SHUTDOWN = 1, 2, 3, 4, 5
TYPE_MAX = 5
LIMIT_FRAME_JSON_BYTES = 8 << 20
LIMIT_FRAME_BLOB_BYTES = 96 << 20


class FrameError(ValueError):
    """A malformed frame: a bad magic or type, a length past the limits, or
    input that ended inside a frame."""


def _finite(obj):
    """@obj with every NaN or infinity made null (JSON has neither)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def pack(ftype, body, blob=b""):
    """One frame's bytes: @body is an object to encode as JSON (a NaN or an
    infinity in it becomes null), or bytes."""
    if not isinstance(body, (bytes, bytearray)):
        try:
            body = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
        except ValueError:
            body = json.dumps(_finite(body), separators=(",", ":"), allow_nan=False).encode()
    return HEADER.pack(MAGIC, ftype, len(body), len(blob)) + bytes(body) + bytes(blob)


def _read_exact(fd, n):
    """@n bytes of @fd, or None at a clean end of input before any byte."""
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise FrameError(f"truncated frame ({got} of {n} bytes)")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def read(fd):
    """The next frame of the descriptor @fd as (type, JSON bytes, blob), or
    None at a clean end of input. Raises FrameError (malformed) or OSError
    (the descriptor could not be read)."""
    head = _read_exact(fd, HEADER.size)
    if head is None:
        return None
    magic, ftype, jlen, blen = HEADER.unpack(head)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic:#x}")
    if ftype < HELLO or ftype > TYPE_MAX:
        raise FrameError(f"bad frame type {ftype}")
    if jlen > LIMIT_FRAME_JSON_BYTES or blen > LIMIT_FRAME_BLOB_BYTES:
        raise FrameError(f"a frame of {jlen} + {blen} bytes is past the limits")
    body = _read_exact(fd, jlen) if jlen else b""
    blob = _read_exact(fd, blen) if blen else b""
    if body is None or blob is None:
        raise FrameError("truncated frame (end of input after its header)")
    return ftype, body, blob
