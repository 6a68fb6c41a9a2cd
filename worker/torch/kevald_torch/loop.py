"""
loop - the worker side of the child protocol (worker/workerloop.c's rules, in
Python): read a frame within the LIMIT_FRAME_* bounds; SHUTDOWN or end of
input ends the worker with 0; a JOB (a JSON object with an integer "id" >= 0)
goes to the role's handler, which sends exactly one RESULT; anything else
ends it with 2. Exit statuses are worker/exitcode.h's.
"""
import json
import logging

from . import frames

EXIT_OK = 0          # end of input or SHUTDOWN
EXIT_FAILED = 1      # start-up failed, or the supervisor's pipe broke
EXIT_PROTOCOL = 2    # a frame that is not a JOB, or a malformed one
EXIT_STICKY = 3      # the CUDA context is dead (a sticky error)
EXIT_TIMEOUT = 4     # a job overran its deadline
EXIT_FORBIDDEN = 5   # a forbidden system call while the candidate's code ran (worker/exitcode.h)

log = logging.getLogger("kevald-torch")


class BadJob(ValueError):
    """A JOB the supervisor should never have sent (the worker exits 2)."""


def job_id(obj):
    """The JOB's id, or raise BadJob."""
    if not isinstance(obj, dict):
        raise BadJob("the JOB is not a JSON object")
    i = obj.get("id")
    if not isinstance(i, int) or isinstance(i, bool) or i < 0 or i > 2**63 - 1:
        raise BadJob("the JOB has no integer id >= 0")
    return i


def run(in_fd, role, handler):
    """Serve JOBs from @in_fd until the end: @handler(job, blob) answers one
    (it sends the RESULT itself) and returns None to go on or an exit status.
    Returns the worker's exit status."""
    while True:
        try:
            fr = frames.read(in_fd)
        except frames.FrameError as e:
            log.error("%s: malformed frame from the supervisor: %s", role, e)
            return EXIT_PROTOCOL
        except OSError as e:
            log.error("%s: reading a frame: %s", role, e)
            return EXIT_FAILED
        if fr is None:
            return EXIT_OK
        ftype, body, blob = fr
        if ftype == frames.SHUTDOWN:
            return EXIT_OK
        if ftype != frames.JOB:
            log.error("%s: unexpected frame type %d from the supervisor", role, ftype)
            return EXIT_PROTOCOL
        try:
            job = json.loads(body) if body else None
            job_id(job)
        except (ValueError, BadJob) as e:
            log.error("%s: malformed frame from the supervisor: %s", role, e)
            return EXIT_PROTOCOL
        try:
            rc = handler(job, blob)
        except BadJob as e:
            log.error("%s: malformed frame from the supervisor: %s", role, e)
            return EXIT_PROTOCOL
        except BrokenPipeError as e:
            log.error("%s: writing a frame: %s", role, e)
            return EXIT_FAILED
        if rc is not None:
            return rc
