#!/usr/bin/env python3
"""
A CPU stand-in for kevald-gpu, for the fleet test: no GPU runs anything, and
every result it sends says so (gpu.name "CPU stand-in ...", gpu.standin true).

It is tests/integration/fake_gpu_worker.py (the real frame protocol, copied
beside this file into each host's libexec folder) with two additions the
fleet test needs:

  * after it writes a RESULT frame it logs {"ev": "sent", "id", "t"} to
    fake_gpu.log (CLOCK_MONOTONIC, one clock for every process of the
    machine): the moment the result left the GPU side, from which the test
    measures how soon a long-poll on another host answers;
  * a candidate kernel named ..._FAKEV_slow waits slow_s (a knob in
    fake_gpu.json, default 0.5 s) before it starts (and is then "correct"), so
    that the test's long-polls on every host are parked before the job ends.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
import fake_gpu_worker as fake  # noqa: E402

STANDIN = "CPU stand-in (kevald fleet test; no GPU ran this)"

fake_read_frame = fake.read_frame
fake_write_frame = fake.write_frame
fake_result_for = fake.result_for
fake_hello = fake.hello


def slow_s():
    try:
        with open(os.path.join(fake.HERE, "fake_gpu.json")) as f:
            return float(json.load(f).get("slow_s", 0.5))
    except FileNotFoundError:
        return 0.5


SLOW_S = slow_s()


def read_frame(fd):
    fr = fake_read_frame(fd)
    if fr is not None and fr[0] == fake.JOB and isinstance(fr[1], dict):
        if fake.marker(fake.candidate_kernels(fr[1])) == "slow":
            time.sleep(SLOW_S)
    return fr


def write_frame(fd, ftype, obj, blob=b""):
    fake_write_frame(fd, ftype, obj, blob)
    if ftype == fake.RESULT:
        fake.log(ev="sent", id=obj.get("id"), t=time.monotonic())


def result_for(job, mark, t0, t1):
    base = fake_result_for(job, "correct" if mark == "slow" else mark, t0, t1)
    base["gpu"] = {"name": STANDIN, "index": 0, "standin": True, "fake_pid": fake.PID}
    return base


def hello():
    h = fake_hello()
    h["name"] = STANDIN
    return h


fake.read_frame = read_frame
fake.write_frame = write_frame
fake.result_for = result_for
fake.hello = hello

if __name__ == "__main__":
    sys.exit(fake.main())
