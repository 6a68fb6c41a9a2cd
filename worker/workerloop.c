/*
 * workerloop - see workerloop.h. Blocking and single-threaded: one frame is
 * read, answered and freed before the next is read, so a worker holds at
 * most one frame's bytes at a time.
 */
#include "worker/workerloop.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "worker/exitcode.h"

/**
 * workerloop_run() - serve the supervisor's frames until the stream ends
 * @loop: the worker's handlers; borrowed
 *
 * Return: the worker's exit status (workerloop.h lists them); never a
 * negative errno.
 */
int workerloop_run(const WorkerLoop *loop)
{
        for (;;) {
                Frame f = { 0 };
                WorkerHandler handler;
                int r = frame_read(loop->fd, &f);

                if (r == FRAME_E_EOF)
                        return WORKER_EXIT_OK;
                if (r == FRAME_E_MALFORMED || r == FRAME_E_TOO_LARGE) {
                        log_error("%s: malformed frame from the supervisor", loop->role);
                        return WORKER_EXIT_PROTOCOL;
                }
                if (r != 0) {
                        log_error("%s: reading a frame: %s", loop->role, strerror(r < 0 ? -r : EIO));
                        return WORKER_EXIT_FAILED;
                }
                if (f.type == FRAME_SHUTDOWN) {
                        frame_clear(&f);
                        return WORKER_EXIT_OK;
                }
                handler = f.type <= FRAME_TYPE_MAX ? loop->handlers[f.type] : NULL;
                if (!handler) {
                        log_error("%s: unexpected frame type %u from the supervisor", loop->role, f.type);
                        frame_clear(&f);
                        return WORKER_EXIT_PROTOCOL;
                }
                r = handler(loop->ctx, &f);
                frame_clear(&f);
                if (r < 0)
                        return WORKER_EXIT_FAILED;
                if (r > 0)
                        return r;
                if (loop->done && loop->done(loop->ctx))
                        return WORKER_EXIT_OK;
        }
}
