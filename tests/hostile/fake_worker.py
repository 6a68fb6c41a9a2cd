#!/usr/bin/python3
"""
A misbehaving stand-in for kevald-compile, used only by the hostile suite.

The suite copies this file into a temporary folder as `kevald-compile`, with
tests/pylib/frames.py beside it (the frame encoding, written once), and
starts `kevald serve --libexec <that folder>`. The first time the supervisor
starts it, it misbehaves as the file `mode` beside it says; every later start
execs the real worker (path in the file `real`), so the test can check that
the supervisor killed the bad one and recovered with a good one. With a file
`persist` beside it, every start misbehaves (a worker that is broken for
good). Each JOB it receives appends a line to the file `jobs` (its pid) and
one to `job_sources` (how many sources: more than 1 for a group JOB). Nothing in
the production code knows about it.

Modes that answer a JOB (after a normal HELLO):
  forged_cubin   ok: true, fields of the wrong types, a 16-byte "CUBIN" that is no ELF
  no_cubin       ok: true without a CUBIN
  hang           never answers (the supervisor's watchdog must kill it)
  proxy_hang_marked
                 (every start) runs the real worker as its child and relays frames
                 both ways, except a JOB whose source contains HANG_ME: that one is
                 never answered (logged to `hung`), as if the source hung the worker
"""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # frames.py, copied beside this file
from frames import HELLO, JOB, RESULT, FrameError, pack, read_raw  # noqa: E402


def hello_json():
    return b'{"role":"compile","pid":%d,"nvrtc":"13.0","arch_default":"sm_90a","layers":{}}' % os.getpid()


def read_frame(src):
    """(type, json bytes, blob) from the descriptor or binary stream @src, or None at its end
    (also inside a frame)."""
    try:
        return read_raw(src)
    except FrameError:
        return None


def read_job():
    """The next JOB frame's JSON (other frames are skipped); logged to `jobs`. Exits 0 at the end
    of input."""
    while True:
        fr = read_frame(0)
        if fr is None:
            sys.exit(0)
        ftype, body, _ = fr
        if ftype == JOB:
            job = json.loads(body)
            with open(os.path.join(HERE, "jobs"), "a") as f:
                f.write(f"{os.getpid()}\n")
            with open(os.path.join(HERE, "job_sources"), "a") as f:
                f.write(f"{len(job.get('group') or [0])}\n")   # a group JOB carries several sources
            return job


def proxy_hang_marked(argv):
    real = open(os.path.join(HERE, "real")).read().strip()
    env = dict(os.environ, KEVALD_PARENT_PID=str(os.getpid()))   # the real worker checks its parent
    child = subprocess.Popen([real] + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    out = sys.stdout.buffer

    def upstream():
        while True:
            fr = read_frame(child.stdout)
            if fr is None:
                os._exit(1)
            out.write(pack(fr[0], fr[1], fr[2]))
            out.flush()

    threading.Thread(target=upstream, daemon=True).start()
    inp = sys.stdin.buffer
    while True:
        fr = read_frame(inp)
        if fr is None:
            child.stdin.close()
            child.wait()
            return
        if fr[0] == JOB and b"HANG_ME" in fr[2]:
            with open(os.path.join(HERE, "hung"), "a") as f:
                f.write(f"{os.getpid()}\n")
            continue   # never answered: the supervisor's watchdog kills us (and the child with our group)
        child.stdin.write(pack(fr[0], fr[1], fr[2]))
        child.stdin.flush()


def main():
    count_path = os.path.join(HERE, "spawns")
    try:
        n = int(open(count_path).read())
    except (OSError, ValueError):
        n = 0
    with open(count_path, "w") as f:
        f.write(str(n + 1))
    if n > 0 and not os.path.exists(os.path.join(HERE, "persist")):
        real = open(os.path.join(HERE, "real")).read().strip()
        os.execv(real, [real] + sys.argv[1:])
    mode = open(os.path.join(HERE, "mode")).read().strip()
    if mode == "proxy_hang_marked":
        return proxy_hang_marked(sys.argv[1:])
    out = sys.stdout.buffer
    if mode == "garbage":
        out.write(b"this is not a frame \x00\xff\xfe" * 64)
    elif mode == "bad_magic":
        out.write(pack(HELLO, b"{}", magic=0xDEADBEEF))
    elif mode == "huge_length":
        out.write(pack(HELLO, b"", json_len=0xFFFFFFF0))
    elif mode == "bad_type":
        out.write(pack(99, b'{"role":"compile"}'))
    elif mode == "not_object":
        out.write(pack(HELLO, b"[1, 2, 3]"))
    elif mode == "result_without_job":
        out.write(pack(HELLO, b'{"role":"compile","pid":%d,"nvrtc":"13.0","arch_default":"sm_90a","layers":{}}' % os.getpid()))
        out.write(pack(RESULT, b'{"id":424242,"ok":true}'))
    elif mode in ("forged_cubin", "no_cubin", "hang"):
        out.write(pack(HELLO, hello_json()))
        out.flush()
        job = read_job()
        if mode == "forged_cubin":
            res = {"id": job.get("id"), "ok": True, "log": 7, "compile_ms": "fast", "kernels": "all of them",
                   "arch": job.get("arch"), "lowered_names": {}}
            out.write(pack(RESULT, json.dumps(res).encode(), b"NOT-AN-ELF-CUBIN"))
        elif mode == "no_cubin":
            res = {"id": job.get("id"), "ok": True, "log": "", "compile_ms": 1.0, "kernels": [],
                   "arch": job.get("arch"), "lowered_names": {}}
            out.write(pack(RESULT, json.dumps(res).encode()))
    elif mode == "hello_twice":
        h = b'{"role":"compile","pid":%d,"nvrtc":"13.0","arch_default":"sm_90a","layers":{}}' % os.getpid()
        out.write(pack(HELLO, h) + pack(HELLO, h))
    out.flush()
    # Stay alive: the supervisor must kill us, not wait for us to leave.
    time.sleep(600)


if __name__ == "__main__":
    main()
