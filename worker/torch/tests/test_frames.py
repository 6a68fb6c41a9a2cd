"""torchworker-frames: the frame format and its limits (kevald_torch/frames.py)."""
import os
import re
import unittest

import helpers
from kevald_torch import frames


def pipe_with(data):
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r


class Frames(unittest.TestCase):
    def test_round_trip(self):
        data = frames.pack(frames.RESULT, {"id": 7, "ok": True}, b"\x00blob")
        fd = pipe_with(data + frames.pack(frames.SHUTDOWN, b""))
        try:
            t, body, blob = frames.read(fd)
            self.assertEqual((t, body, blob), (frames.RESULT, b'{"id":7,"ok":true}', b"\x00blob"))
            self.assertEqual(frames.read(fd), (frames.SHUTDOWN, b"", b""))
            self.assertIsNone(frames.read(fd))
        finally:
            os.close(fd)

    def test_non_finite_numbers_become_null(self):
        data = frames.pack(frames.RESULT, {"a": float("nan"), "b": [1.5, float("inf")], "c": {"d": -float("inf")}})
        self.assertEqual(data[16:], b'{"a":null,"b":[1.5,null],"c":{"d":null}}')

    def test_header_layout(self):
        data = frames.pack(frames.HELLO, b"{}", b"xyz")
        self.assertEqual(data[:4], b"KVF1")
        self.assertEqual(data[4:16], bytes([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]))

    def test_limits_match_common_limits_h(self):
        text = (helpers.SRC / "common" / "limits.h").read_text()
        def value(name):
            m = re.search(rf"#define {name} \((\d+)u << (\d+)\)", text)
            return int(m.group(1)) << int(m.group(2))
        self.assertEqual(frames.LIMIT_FRAME_JSON_BYTES, value("LIMIT_FRAME_JSON_BYTES"))
        self.assertEqual(frames.LIMIT_FRAME_BLOB_BYTES, value("LIMIT_FRAME_BLOB_BYTES"))

    def bad(self, data, why):
        fd = pipe_with(data)
        try:
            with self.assertRaises(frames.FrameError) as cm:
                frames.read(fd)
            self.assertIn(why, str(cm.exception))
        finally:
            os.close(fd)

    def test_bad_frames(self):
        good = frames.pack(frames.JOB, {"id": 1})
        self.bad(b"XXXX" + good[4:], "bad magic")
        self.bad(frames.HEADER.pack(frames.MAGIC, 9, 0, 0), "bad frame type 9")
        self.bad(frames.HEADER.pack(frames.MAGIC, 0, 0, 0), "bad frame type 0")
        self.bad(good[:-3], "truncated")
        self.bad(good[:10], "truncated")
        # past the limits: refused from the header alone, before reading a byte of the body
        self.bad(frames.HEADER.pack(frames.MAGIC, frames.JOB, frames.LIMIT_FRAME_JSON_BYTES + 1, 0), "past the limits")
        self.bad(frames.HEADER.pack(frames.MAGIC, frames.JOB, 2, frames.LIMIT_FRAME_BLOB_BYTES + 1), "past the limits")


if __name__ == "__main__":
    unittest.main()
