/*
 * workerloop - the worker side of the child protocol (docs/internals.md,
 * "Child protocol"), one loop for kevald-compile and kevald-gpu: read the
 * supervisor's frames (common/frame.h, whose reader holds them to
 * LIMIT_FRAME_JSON_BYTES and LIMIT_FRAME_BLOB_BYTES before it allocates),
 * hand each to the worker's handler for its type, and end with the status
 * worker/exitcode.h gives the way it ended:
 *
 *   WORKER_EXIT_OK        end of input, SHUTDOWN, or the worker's done()
 *                         after an answered frame;
 *   WORKER_EXIT_PROTOCOL  a malformed or oversized frame, a frame of a type
 *                         the worker has no handler for (SHUTDOWN aside);
 *   WORKER_EXIT_FAILED    the pipe could not be read (an errno), or a
 *                         handler failed with a negative errno;
 *   any other status      a handler's own (WORKER_EXIT_PROTOCOL for a JOB
 *                         it refuses, ...).
 *
 * The loop logs the frames it refuses ("<role>: malformed frame from the
 * supervisor", ...); a handler logs its own failures. What stays in each
 * worker's main: start-up, the sandbox, HELLO, how a JOB is answered, and
 * the watchdogs and immediate _exit()s that must not wait for the loop.
 */
#pragma once

#include <stdbool.h>

#include "common/frame.h"

/*
 * A handler answers one frame. @frame is borrowed: the loop frees it when
 * the handler returns (a handler that _exit()s need not). Return 0 when the
 * frame is answered (the loop reads the next), a positive WORKER_EXIT_*
 * status to end the loop with, or a negative errno (WORKER_EXIT_FAILED).
 */
typedef int (*WorkerHandler)(void *ctx, const Frame *frame);

typedef struct WorkerLoop {
        const char *role;    /* prefix of the loop's log lines: "compile", "gpu" */
        int fd;              /* where the supervisor's frames arrive (fd 0) */
        WorkerHandler handlers[FRAME_TYPE_MAX + 1]; /* by frame type; NULL: unexpected.
                                                     * FRAME_SHUTDOWN is the loop's own */
        bool (*done)(void *ctx); /* optional: asked after each answered frame;
                                  * true ends the loop with WORKER_EXIT_OK */
        void *ctx;           /* passed to the handlers and done(); borrowed */
} WorkerLoop;

int workerloop_run(const WorkerLoop *loop);
