/*
 * dispatch - the dispatcher: one libuv loop in its own thread that moves
 * jobs queued -> compiling -> compiled -> running -> done, feeds the compile
 * and GPU workers (started from the process table, server/dispatch/proctab.h) over
 * frames, keeps the compile cache, runs the lease reaper and wakes long-poll
 * waiters when a job is done; kernelbench jobs go to the kevald-torch
 * workers (dispatch_torch.c). Owned by the lead; server/dispatch/dispatch.c.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/baselines.h"
#include "common/kbtasks.h"
#include "common/tasklib.h"
#include "server/http/waiters.h"

typedef struct Dispatcher Dispatcher;

typedef struct DispatchConfig {
        const char *db_path;        /* the dispatcher opens its own Store on it */
        const TaskLib *tasks;       /* borrowed, immutable */
        const Baselines *baselines; /* PyTorch baselines of the library's tasks; borrowed, immutable; NULL: none */
        Waiters *waiters;           /* borrowed; NULL allowed */
        const char *libexec_dir;    /* where kevald-compile and kevald-gpu are */
        int compile_workers;        /* 0: one per core */
        const char *gpus;           /* "auto", "none", or a list "0,1" */
        int max_attempts;           /* per job, then internal_error (default 3) */
        double lease_s;             /* lease length; heartbeats every lease_s / 3 */
        bool sandbox;               /* false only for the overhead benchmark */
        const char *arch;           /* compile target when no GPU says otherwise ("sm_90a") */
        double job_timeout_s;       /* deadline of a whole GPU job (default 120) */
        int launch_timeout_ms;      /* deadline of one plan execution on the GPU (default 10000) */
        double launch_factor;       /* per-launch limit = factor x the reference's time on the shape set,
                                     * at least launch_floor_ms, at most launch_timeout_ms
                                     * (0: default 1000; negative: off, the ceiling for every launch) */
        int launch_floor_ms;        /* 0: LIMIT_LAUNCH_FLOOR_MS_DEFAULT */
        int fault_grace_ms;         /* wait for a late fault after a launch limit (0: LIMIT_FAULT_GRACE_MS_DEFAULT; -1: none) */
        bool no_fence;              /* run the plain build in every phase (config fence = false) */
        int compile_nice;           /* the compile workers run this much nicer than the server (0: as it) */
        bool no_prefetch;           /* send a GPU worker its next job only once it is idle (config gpu_prefetch = false) */
        int gpu_workers_per_gpu;    /* worker processes per GPU, one running at a time (0: default 3) */
        int compile_timeout_ms;     /* deadline of one compile (default LIMIT_COMPILE_WALL_MS) */
        int compile_group;          /* at most this many requests in a group JOB (1 or 0: none) */
        const char *dump_dir;       /* `kevald eval --dump`: write reference-side buffers here */
        const KbIndex *kbtasks;     /* KernelBench tasks; borrowed, immutable; NULL: none */
        int torch_workers;          /* kevald-torch run workers per GPU; 0: no kevald-torch worker at all */
        int torch_build_workers;    /* kevald-torch build workers (with torch_workers > 0); 0: torch_build_default() */
        const char *torch_python;   /* the interpreter that runs kevald-torch (default "python3") */
        int torch_build_timeout_ms; /* deadline of one kernelbench build (0: LIMIT_KB_BUILD_MS_DEFAULT) */
        const char *torch_ext_dir;  /* the kernelbench build cache's folder (made if missing) */
        const char *log_level;      /* passed to kevald-torch (KEVALD_LOG_LEVEL) */
        bool has_fixed_seed;        /* `kevald eval --seed`: reproduce a result; never set by serve */
        uint64_t fixed_seed;
} DispatchConfig;

int dispatch_start(const DispatchConfig *cfg, Dispatcher **ret_dispatcher);
/* Thread-safe: new work was queued, or a job was cancelled. */
void dispatch_notify(Dispatcher *d);
/* Stop taking jobs, let running ones finish for up to @grace_s, requeue the rest, join. */
int dispatch_stop(Dispatcher *d, double grace_s);
void dispatch_free(Dispatcher *d);
/*
 * Thread-safe snapshot for /readyz, /metrics and /v1/stats; new reference:
 * {"compile_workers": {"configured": n, "ready": n, "busy": n, "restarts": n, "failed": n},
 *  "gpus": [{"index": 0, "name": ..., "state": "ready|busy|starting|restarting|failed", "restarts": n,
 *            "busy_s": x, "workers": n, "workers_ready": n}],   (one entry per GPU)
 *  "layers": {"compile": {...}, "gpu": {...}, "torch-build": {...}, "torch-run": {...}},
 *  "torch": {"workers_per_gpu": n, "torch": "2.9.0" or null, "build": {"configured", "ready", "busy",
 *            "restarts", "failed", "workers": [...]}, "run": [{"gpu", "state", "restarts", "busy_s",
 *            and the worker's HELLO fields}]},
 *  "counters": {"jobs_done": n, "cache_hits": n, "cache_misses": n, "verdicts": {...}},
 *  "ready": bool, "reason": "..."}
 */
json_t *dispatch_status(Dispatcher *d);
