/*
 * exitcode - what a worker's exit status means, one table for both workers
 * (kevald-compile, kevald-gpu) and the supervisor that reads it
 * (server/dispatch/dispatch_worker.c logs it; a RESULT's "exiting" says the same in
 * words). A status is never reused with another meaning.
 */
#ifndef KEVALD_WORKER_EXITCODE_H
#define KEVALD_WORKER_EXITCODE_H

#define WORKER_EXIT_OK 0        /* end of input or SHUTDOWN */
#define WORKER_EXIT_FAILED 1    /* start-up failed, or the supervisor's pipe broke */
#define WORKER_EXIT_PROTOCOL 2  /* the supervisor sent a frame that is not a JOB (or malformed) */
#define WORKER_EXIT_STICKY 3    /* kevald-gpu: the CUDA context is dead (a sticky error) */
#define WORKER_EXIT_TIMEOUT 4   /* a request overran its limit: the process exits so that its
                                 * work (a spinning kernel, an NVRTC template bomb) dies with it */
#define WORKER_EXIT_FORBIDDEN 5 /* kevald-torch run role: a system call its filter forbids, made while
                                 * the candidate's code ran (sandbox_blame_candidate()): the
                                 * candidate's call, not the worker's */

#endif
