/*
 * dispatch_int.h - what the dispatcher's files share (server/dispatch/dispatch*.c).
 *
 * One libuv loop in the dispatcher's thread owns everything declared here
 * (dispatch.c's theory of operation); nothing here is for the rest of the
 * server, which sees dispatch.h only.
 */
#ifndef KEVALD_SERVER_DISPATCH_INT_H
#define KEVALD_SERVER_DISPATCH_INT_H

#include "server/dispatch/dispatch.h"


#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "common/frame.h"
#include "common/limits.h"
#include "common/jsonutil.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/spec.h"
#include "common/verdict.h"
#include "server/dispatch/pipeline.h"
#include "server/dispatch/proctab.h"
#include "server/dispatch/resultcheck.h"
#include "server/dispatch/torchview.h"
#include "server/store/store.h"

#define MAX_WORKERS 256
#define EXIT_GRACE_MS 10000            /* a GPU worker that said it exits, killed past this */
#define COMPILE_BACKLOG_PER_WORKER 8   /* compile-stage jobs held in memory per worker */
#define PUMP_BATCH 32                  /* compile-stage claims per loop turn before yielding */
#define WATCHDOG_GRACE_MS 5000
#define REF_CACHE_SLOTS 64
#define GRACE_SEEN_N 32                /* faults that surfaced within the grace, remembered */
#define GRACE_MARGIN 1.5               /* the grace sent: this times the most of it one of them used */
#define GRACE_ADAPT_MAX_MS 2000        /* ...at most this (or the configured grace, if larger) */
#define ORPHAN_WAIT_MS 10000            /* an orphan no GPU worker took goes back to the store after this */
#define OWED_RETRY_MS 1000             /* a store write that failed is tried again this often */

/* W_EXITING: a GPU worker sent its RESULT with "exiting" and is on its way
 * out. After a timeout ("exiting": "timeout") its GPU stays reserved until
 * the process is gone, so the next job never overlaps a spinning kernel;
 * after a sticky fault ("sticky") the context is dead and the standby may
 * start at once. */
typedef enum { W_STOPPED, W_STARTING, W_IDLE, W_BUSY, W_EXITING } WorkerState;
typedef enum { SLOT_CAND = 0, SLOT_REF = 1 } Slot;

typedef struct Dispatcher Dispatcher;
typedef struct Job Job;
typedef struct CompileReq CompileReq;

/* Compile-only requests sent to one compile worker in a group JOB, at most
 * (the worker merges them into one NVRTC program where that gives each the
 * result it would get alone: worker/compile/group.h). 8 small kernels merged
 * cost 0.42x of 8 compiles alone (bench/compile/nvrtc_cost.py, NVRTC 13.0). */
#define COMPILE_GROUP_JOB_MAX 8

/* Where a GPU's time goes, as the dispatcher sees it. Settled each time the
 * loop is about to wait (uv_prepare), so that every interval is charged to
 * the state the GPU was in during it:
 *   running     a job is in flight on it, or a worker that timed out or is
 *               being killed still holds it;
 *   no_worker   nothing runs and none of its workers is ready (all starting,
 *               restarting or exiting): what restarts cost the GPU;
 *   no_work     a worker is ready and nothing runs: the run stage had no job
 *               for it (an empty queue, or jobs still compiling). */
enum { GPU_T_RUNNING, GPU_T_NO_WORKER, GPU_T_NO_WORK, GPU_T_N };
static const char *const gpu_time_name[GPU_T_N] = { "running", "no_worker", "no_work" };

typedef struct GpuClock {
        int index;              /* the host's GPU index */
        int state;              /* GPU_T_*, as of the last settle */
        uint64_t since_ns;
        double s[GPU_T_N];      /* seconds in each state since start-up */
} GpuClock;

/* A compiled artifact: the compile RESULT and its CUBINs. */
typedef struct Artifact {
        uint8_t key[32];
        json_t *compile;   /* compile RESULT JSON */
        uint8_t *cubin;    /* the plain CUBIN, then the fenced one (if any) */
        size_t cubin_len;
        size_t plain_len;  /* cubin[0, plain_len): the plain build */
        size_t fenced_len; /* cubin[plain_len, plain_len + fenced_len): the fenced build, or 0 */
        int cache_hit;
} Artifact;

typedef struct Worker {
        Dispatcher *d;
        const ProcSpec *spec;
        int index;              /* compile slot, or GPU device index */
        WorkerState state;
        uv_process_t proc;
        uv_pipe_t to_child, from_child;
        int handles_open;       /* handles not yet closed (proc + 2 pipes) */
        FrameDecoder dec;
        json_t *hello;
        CompileReq *req;        /* compile worker: request in flight */
        CompileReq *group[COMPILE_GROUP_JOB_MAX]; /* compile worker: a group JOB's requests, NULL once answered */
        size_t n_group, group_left;
        Job *job;               /* GPU worker: job in flight */
        Job *queued;            /* GPU worker: the next job, already in its pipe (prefetch) */
        uint64_t sent_at_ms, deadline_ms;
        bool killed_by_watchdog, result_seen, malformed;
        bool holds_gpu;         /* W_EXITING: the GPU stays reserved until the process is gone */
        bool dying;             /* SIGKILL sent: no new request; a GPU stays reserved until the exit */
        int failures;           /* consecutive failed starts or crashes */
        int restarts;
        uint64_t restart_at_ms;
        double busy_s;
        char label[32];
        char start_error[256];  /* the last HELLO "ok": false's error ("stage: message"), or "" */
        char view[TORCHVIEW_NAME_BYTES]; /* kevald-torch run worker: its view beneath torch_run_root, or "" */
} Worker;

struct CompileReq {
        CompileReq *next;
        uint8_t key[32];
        char *language, *arch;
        json_t *options, *name_expressions;
        char *source;
        size_t source_len;
        bool fence;             /* build the fenced CUBIN too (the key says so) */
        Job **waiting;          /* jobs and the slot each waits in */
        Slot *slots;
        size_t n_waiting, cap_waiting;
        int attempts;           /* abnormal ends on a worker (compile_req_fault(), compile_req_hung()) */
        int hangs;              /* of which the worker stopped answering */
        uint64_t answers_at_hang; /* Dispatcher.compile_answers at the first hang */
        bool in_flight;
        bool grouped;           /* sent in a group JOB: a full-mode job does not join it */
        bool no_group;          /* its group failed on the worker: alone from now on */
};

struct Job {
        Job *next;
        StoreJob *sj;
        Task *own_task;         /* inline task, owned */
        const Task *task;       /* library or own_task */
        Artifact *art[2];
        int pending;            /* compile requests outstanding */
        uint64_t seed;
        uint64_t claimed_ms;
        json_t *gjob;           /* run stage: the JOB sent to a GPU worker (kept to send it again) */
        uint64_t orphaned_ms;   /* when it became an orphan (worker_orphan_queued()) */
        const KbTask *kb;       /* a kernelbench job: its task (cfg.kbtasks); else NULL */
        bool wait_torch;        /* a kernelbench build waits for a build worker's HELLO (its torch version) */
};

/*
 * A store write the dispatcher owes: the job's outcome is decided (a
 * verdict, back to a queue, compiled) but the store refused to record it (a
 * full disk, a read-only file, an I/O error, a lost PostgreSQL connection).
 * The job stays held, under its lease, until the write succeeds or the store
 * says the lease is gone: it is never dropped while its lease is renewed.
 */
typedef enum { OWE_FINISH, OWE_REQUEUE, OWE_COMPILED, OWE_REQUEUE_UNCHARGED } OweKind;
typedef struct Owed {
        struct Owed *next;
        OweKind kind;
        int64_t id;
        Stage stage;            /* OWE_REQUEUE: the stage whose queue it goes back to */
        char verdict[32];       /* OWE_FINISH */
        double speedup;         /* OWE_FINISH */
        json_t *doc;            /* OWE_FINISH: the result; OWE_COMPILED: the compile section */
        char *task;             /* the job's task name, or NULL (for a fallback result) */
        int tries;
        bool fallback;          /* the write became an internal_error finish (owed_try()) */
} Owed;

struct Dispatcher {
        DispatchConfig cfg;
        char *libexec_dir, *arch, *gpus_spec;
        uv_loop_t loop;
        uv_async_t wake, stop_async;
        uv_timer_t tick;
        uv_idle_t pump_idle;
        bool idle_active;
        uv_thread_t thread;
        Store *store;
        uint8_t secret[32];
        char owner[STORE_LEASE_OWNER_BYTES]; /* this process's leases' owner (store_lease_plan()) */
        uint64_t lease_renew_ms;             /* ... renewed this often (store_lease_plan()) */
        char nvrtc[32];
        char torch_version[64]; /* a kevald-torch build worker's HELLO "torch": part of the build cache key */
        char *torch_ext_root;   /* absolute: the kernelbench build cache */
        char *torch_run_root;   /* <torch_ext_root>.run: the run workers' views of it (torchview.h) */
        int torch_run_lock;     /* the lock on torch_run_root (one server per cache), or -1 */
        uint64_t torch_views;   /* views made: the next one's serial */
        char *torch_pycache;    /* <torch_ext_root>.pyc: the workers' bytecode (dispatch_pycache.c), or NULL */
        pid_t pycache_pid;      /* the fill running (under status_lock), or 0 */
        pthread_t pycache_thread;
        bool pycache_thread_on;
        int n_torch_build;      /* kevald-torch build workers (0 with torch_workers 0) */
        long max_shared_optin;

        Worker workers[MAX_WORKERS];
        int n_workers;
        int n_compile;
        GpuClock clocks[MAX_WORKERS];
        int n_clocks;
        uv_prepare_t settle;

        CompileReq *compiles;   /* queued and in-flight requests */
        Owed *owed;             /* store writes that failed, oldest first; no claims while any */
        int n_owed;
        uint64_t owed_retry_ms;
        uint64_t compile_answers; /* valid compile RESULTs received (compile_req_hung()) */
        Job *jobs;              /* compile-stage jobs in memory */
        int n_jobs;
        Job *orphans;           /* run-stage jobs sent to a worker that will not run them; next to run */
        int n_orphans;

        Artifact *refs[REF_CACHE_SLOTS];   /* recent reference artifacts */
        int ref_next;

        uint64_t last_heartbeat_ms, last_reap_ms, last_prune_ms;
        bool stopping;
        double stop_grace_s;
        uint64_t stop_deadline_ms;

        /* the fault grace each job gets (grace_note()) */
        int fault_grace_now;
        double grace_seen[GRACE_SEEN_N];
        int grace_seen_next;

        /* counters */
        uint64_t jobs_done, cache_hits, cache_misses, compiles_sent;
        uint64_t compile_groups, compile_merged; /* group JOBs sent; their requests answered merged */
        json_t *verdicts;

        pthread_mutex_t status_lock;
        json_t *status;
        bool status_dirty;
};

static inline uint64_t now_ms(Dispatcher *d)
{
        uv_update_time(&d->loop);
        return uv_now(&d->loop);
}

/* dispatch.c */
void dispatch_pump(Dispatcher *d);

/* dispatch_status.c: GPU clocks and the status snapshot other threads read */
void on_prepare(uv_prepare_t *h);
void status_rebuild(Dispatcher *d);

/*
 * dispatch_record.c: finishing jobs: verdict counters, the store writes a job's outcome takes, and
 * the writes owed when the store refuses them
 */
json_t *compile_section_of(const Job *j, Slot s);
void record_count_verdict(Dispatcher *d, const char *verdict);
void record_finish(Dispatcher *d, const StoreJob *sj, const char *verdict, json_t *result);
void job_finish(Dispatcher *d, Job *j, const char *verdict, json_t *error);
void job_free(Job *j);
const char *job_task_name(const Job *j);
void job_unlink(Dispatcher *d, Job *j);
void record_notify_done(Dispatcher *d, int64_t id);
void record_owe(Dispatcher *d, OweKind kind, int64_t id, Stage stage, const char *verdict, double speedup,
                json_t *doc, const char *task);
void record_owed_free(Owed *o);
void record_owed_retry(Dispatcher *d);
void record_requeue(Dispatcher *d, int64_t id, Stage stage, const char *task);
void record_requeue_uncharged(Dispatcher *d, int64_t id, Stage stage, const char *task);

/* dispatch_worker.c: worker processes: start, frames in and out, exit, kill; which worker is free */
Worker *idle_worker(Dispatcher *d, ProcRole role);
void group_release(Dispatcher *d, Worker *w, const char *why);
bool gpu_reserved(Dispatcher *d, int index);
void worker_kill(Worker *w, const char *why);
int worker_send(Worker *w, uint32_t type, json_t *msg, const uint8_t *blob1, size_t len1,
                const uint8_t *blob2, size_t len2);
void worker_start(Worker *w);

/*
 * dispatch_compile.c: the compile stage: artifacts (compiled CUBINs) and the compile cache,
 * compile requests and their coalescing, claiming a job and waiting for its CUBINs
 */
Artifact *artifact_by_hex(Dispatcher *d, const char *hex);
void artifact_free(Artifact *a);
void compile_done(Dispatcher *d, CompileReq *req, json_t *result, const uint8_t *cubin, size_t len,
                  bool cacheable);
void compile_req_fault(Dispatcher *d, CompileReq *req, const char *why);
void compile_req_free(CompileReq *req);
int compile_request(Dispatcher *d, Job *j, Slot slot, const uint8_t key[32], const char *language, json_t *options,
                    json_t *names, const char *source, bool fence);
Artifact *artifact_new(const uint8_t key[32], json_t *compile, const uint8_t *cubin, size_t len, int cache_hit);
void compile_req_hung(Dispatcher *d, CompileReq *req, double limit_s);
void job_begin_compile(Dispatcher *d, Job *j);
Job *job_new(Dispatcher *d, StoreJob *sj);
int job_resolve_task(Dispatcher *d, Job *j);
void send_compiles(Dispatcher *d);

/*
 * dispatch_torch.c: kernelbench jobs (kevald-torch): the build stage (cache key, build folders,
 * build requests and RESULTs), the run JOB, and pruning the build cache
 */
void torch_job_begin(Dispatcher *d, Job *j);
void torch_job_built(Dispatcher *d, Job *j);
void torch_workers_ready(Dispatcher *d);
int torch_build_msg(Dispatcher *d, const CompileReq *req, json_t **ret_msg);
void torch_build_fail(Dispatcher *d, CompileReq *req, const char *log);
json_t *torch_build_result(Dispatcher *d, json_t *msg);
int torch_run_prepare(Dispatcher *d, Job *j);
int torch_run_send(Worker *w, Job *j);
int torch_view_open(Worker *w, char path[PATH_MAX]);
void torch_view_close(Worker *w);
Artifact *torch_artifact_by_hex(Dispatcher *d, const char *hex);
void torch_prune(Dispatcher *d);
void torch_check_pools(Dispatcher *d);
int torch_root_own(const char *root);

/* dispatch_pycache.c */
void torch_pycache_start(Dispatcher *d);
void torch_pycache_stop(Dispatcher *d);

/*
 * dispatch_run.c: the run stage: claiming a compiled job, sending it to a GPU worker (prefetch and
 * orphans), the fault grace, and what a GPU RESULT becomes
 */
void gpu_done(Dispatcher *d, Worker *w, Job *j, json_t *result);
void gpu_invalid(Dispatcher *d, Worker *w, Job *j, const char *why);
void run_job_launch_limits(const Dispatcher *d, json_t *gjob);
int run_one(Dispatcher *d, Worker *w);
bool run_has_orphan_for(const Dispatcher *d, const Worker *w);
void worker_begin_job(Dispatcher *d, Worker *w, Job *j);
void worker_orphan_queued(Dispatcher *d, Worker *w);
void run_orphans_release(Dispatcher *d);

#endif
