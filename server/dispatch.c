/*
 * dispatch - see dispatch.h.
 *
 * Theory of operation. Everything here runs on one libuv loop in the
 * dispatcher's thread, so no state below needs a lock except the status
 * snapshot that other threads read. The loop owns:
 *
 *   workers[]   one Worker per child process (compile ×K, GPU ×W per GPU),
 *               each with a pipe pair, a FrameDecoder and at most one
 *               outstanding request (a busy GPU worker also holds its next
 *               job in its pipe with gpu_prefetch: `queued`, run_send()). A worker is STARTING until its HELLO,
 *               then IDLE or BUSY (EXITING after a RESULT that says the
 *               process exits); when its process exits it is restarted
 *               with exponential backoff (a clean exit after a sticky CUDA
 *               error restarts at once). Of the W workers of one GPU only
 *               one is BUSY (or EXITING after a timeout) at a time
 *               (gpu_reserved()); the others stand by warm, so the restart
 *               after a sticky error or a timeout happens while the next
 *               job already runs.
 *   compiles    compile requests keyed by the cache key; identical requests
 *               are coalesced, so a rollout of 4,096 kernels for one task
 *               compiles the reference once.
 *   jobs        submissions claimed for the compile stage, waiting for their
 *               candidate and reference CUBINs.
 *
 * A job in the compile stage: claimed (lease) -> its CUBINs come from the
 * compile cache or from compile requests -> plan checked against the real
 * kernel signatures -> done (compile mode, compile_error, rejected) or
 * marked compiled (waiting for a GPU). A job in the run stage is claimed
 * only when a GPU worker is idle, so a job's timing never overlaps another
 * job on the same GPU; its CUBINs come back from the cache by key.
 *
 * Faults: a watchdog kills a worker that overruns its request (SIGKILL to
 * its process group). For a GPU job that is the kernel's fault (verdict
 * timeout); for a compile request it is the worker's first (the compile
 * worker answers its own time limit): retried once on a fresh worker
 * (compile_req_hung()). A worker that dies on its own without a RESULT is an
 * infrastructure fault: its job goes back to the queue, and after
 * max_attempts ends as internal_error. A malformed frame kills the worker,
 * and so does a RESULT that fails its checks (server/resultcheck.h): no
 * RESULT is believed, cached or stored before it is checked.
 *
 * Store writes: a job's outcome (finish, requeue, compiled) that the store
 * refuses (a full disk, a lost connection) is kept in owed and retried from
 * the tick until it is written or the lease is gone; while anything is owed
 * nothing new is claimed. So no job is dropped while this process renews
 * its lease (jobs_held() checks it at each heartbeat).
 */
#include "server/dispatch.h"

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
#include "server/pipeline.h"
#include "server/proctab.h"
#include "server/resultcheck.h"
#include "server/store.h"

#define MAX_WORKERS 128
#define EXIT_GRACE_MS 10000            /* a GPU worker that said it exits, killed past this */
#define COMPILE_BACKLOG_PER_WORKER 8   /* compile-stage jobs held in memory per worker */
#define PUMP_BATCH 32                  /* compile-stage claims per loop turn before yielding */
#define WATCHDOG_GRACE_MS 5000
#define REF_CACHE_SLOTS 64
#define GRACE_SEEN_N 32                /* faults that surfaced within the grace, remembered */
#define GRACE_MARGIN 1.5               /* the grace sent: this times the most of it one of them used */
#define GRACE_ADAPT_MAX_MS 2000        /* ...at most this (or the configured grace, if larger) */
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
};

/*
 * A store write the dispatcher owes: the job's outcome is decided (a
 * verdict, back to a queue, compiled) but the store refused to record it (a
 * full disk, a read-only file, an I/O error, a lost PostgreSQL connection).
 * The job stays held, under its lease, until the write succeeds or the store
 * says the lease is gone: it is never dropped while its lease is renewed.
 */
typedef enum { OWE_FINISH, OWE_REQUEUE, OWE_COMPILED } OweKind;
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
        char owner[96];   /* host id (LIMIT_HOST_ID_BYTES) "/kevald-" pid */
        char nvrtc[32];
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
        json_t *verdicts;

        pthread_mutex_t status_lock;
        json_t *status;
        bool status_dirty;
};



static uint64_t now_ms(Dispatcher *d)
{
        uv_update_time(&d->loop);
        return uv_now(&d->loop);
}

/* ---- artifacts -------------------------------------------------------- */

static void artifact_free(Artifact *a)
{
        if (!a)
                return;
        json_decref(a->compile);
        free(a->cubin);
        free(a);
}

/*
 * Where the plain and the fenced build lie in the blob: compile.fence's
 * offset and size when they describe exactly the blob's tail after a
 * non-empty plain part; otherwise the whole blob is the plain build.
 */
static void artifact_split(Artifact *a)
{
        json_t *fence = json_object_get(a->compile, "fence");
        json_int_t off = json_integer_value(json_object_get(fence, "offset"));
        json_int_t size = json_integer_value(json_object_get(fence, "size"));

        a->plain_len = a->cubin_len;
        a->fenced_len = 0;
        if (off > 0 && size > 0 && (uint64_t)off + (uint64_t)size == a->cubin_len) {
                a->plain_len = (size_t)off;
                a->fenced_len = (size_t)size;
        }
}

static Artifact *artifact_new(const uint8_t key[32], json_t *compile, const uint8_t *cubin, size_t len,
                              int cache_hit)
{
        Artifact *a = calloc(1, sizeof(*a));

        if (!a)
                return NULL;
        memcpy(a->key, key, 32);
        a->compile = json_incref(compile);
        a->cache_hit = cache_hit;
        if (len) {
                a->cubin = malloc(len);
                if (!a->cubin) {
                        artifact_free(a);
                        return NULL;
                }
                memcpy(a->cubin, cubin, len);
                a->cubin_len = len;
        }
        artifact_split(a);
        return a;
}

static Artifact *artifact_copy(const Artifact *a, int cache_hit)
{
        return artifact_new(a->key, a->compile, a->cubin, a->cubin_len, cache_hit);
}

/* Keep a copy of a reference artifact in the ring of recent ones (oldest replaced). */
static void ref_remember(Dispatcher *d, const Artifact *a)
{
        artifact_free(d->refs[d->ref_next]);
        d->refs[d->ref_next] = artifact_copy(a, 1);
        d->ref_next = (d->ref_next + 1) % REF_CACHE_SLOTS;
}

/*
 * Look in the in-memory reference slots, then in the store's compile cache.
 * A cache entry is checked as a fresh RESULT would be (an entry written
 * before RESULTs were checked may be forged): one that fails is a miss, and
 * the compile that follows replaces it.
 */
static Artifact *artifact_lookup(Dispatcher *d, const uint8_t key[32], bool remember)
{
        char why[RESULTCHECK_WHY_BYTES];
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        Artifact *a;

        for (int i = 0; i < REF_CACHE_SLOTS; i++)
                if (d->refs[i] && memcmp(d->refs[i]->key, key, 32) == 0)
                        return artifact_copy(d->refs[i], 1);
        if (store_cache_get(d->store, key, &compile, &cubin, &len) != 0)
                return NULL;
        if (resultcheck_compile(compile, cubin, len, d->arch, why) != 0) {
                log_warn("dispatch: ignoring a compile cache entry that fails its checks: %s", why);
                json_decref(compile);
                free(cubin);
                return NULL;
        }
        a = artifact_new(key, compile, cubin, len, 1);
        json_decref(compile);
        free(cubin);
        if (a && remember)
                ref_remember(d, a);
        return a;
}

/* ---- status snapshot ---------------------------------------------------- */

static const char *worker_state_name(const Worker *w)
{
        switch (w->state) {
        case W_STARTING:
                return "starting";
        case W_IDLE:
                return "ready";
        case W_BUSY:
        case W_EXITING:
                return "busy";
        default:
                return w->failures >= w->spec->failures_to_degrade ? "failed" : "restarting";
        }
}

static int gpu_time_state(Dispatcher *d, int index)
{
        bool ready = false;

        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (w->spec->role != PROC_GPU || w->index != index || w->state == W_STOPPED)
                        continue;
                /* a job, or a hung one's worker on its way out; not a standby or a
                 * start-up that is being killed (that is time without a worker) */
                if (w->state == W_BUSY || (w->state == W_EXITING && w->holds_gpu) ||
                    (w->dying && w->killed_by_watchdog))
                        return GPU_T_RUNNING;
                if (w->state == W_IDLE && !w->dying)
                        ready = true;
        }
        return ready ? GPU_T_NO_WORK : GPU_T_NO_WORKER;
}

/* Charge the time since the last settle to each GPU's state then, and take
 * its state now. */
static void gpu_clocks_settle(Dispatcher *d)
{
        uint64_t now = uv_hrtime();

        for (int i = 0; i < d->n_clocks; i++) {
                GpuClock *c = &d->clocks[i];
                c->s[c->state] += (double)(now - c->since_ns) / 1e9;
                c->since_ns = now;
                c->state = gpu_time_state(d, c->index);
        }
}

static void on_prepare(uv_prepare_t *h)
{
        gpu_clocks_settle(h->data);
}

static const GpuClock *gpu_clock(const Dispatcher *d, int index)
{
        for (int i = 0; i < d->n_clocks; i++)
                if (d->clocks[i].index == index)
                        return &d->clocks[i];
        return NULL;
}

/* Fold GPU worker @w into the status entry of its GPU (one per GPU). */
static void gpu_status_add(json_t *gpus, const Worker *w)
{
        static const char *const rank[] = { "failed", "restarting", "starting", "ready", "busy" };
        const char *state = worker_state_name(w), *name, *arch;
        json_t *g = NULL;
        size_t i;
        int a = 0, b = 0;

        json_array_foreach(gpus, i, g) {
                if (json_integer_value(json_object_get(g, "index")) == w->index)
                        break;
        }
        if (i == json_array_size(gpus)) {
                const GpuClock *c = gpu_clock(w->d, w->index);
                json_t *t = json_object();
                g = json_pack("{s:i, s:s, s:i, s:f, s:i, s:i, s:n}", "index", w->index, "state", state, "restarts", 0,
                              "busy_s", 0.0, "workers", 0, "workers_ready", 0, "queued");
                for (int k = 0; c && k < GPU_T_N; k++)
                        json_object_set_new(t, gpu_time_name[k], json_real(c->s[k]));
                json_object_set_new(g, "time_s", t);
                json_array_append_new(gpus, g);
        }
        /* the GPU's state is its most useful worker's: busy > ready > starting > restarting > failed */
        for (int k = 0; k < 5; k++) {
                if (strcmp(rank[k], state) == 0)
                        a = k;
                if (strcmp(rank[k], json_string_value(json_object_get(g, "state"))) == 0)
                        b = k;
        }
        if (a > b)
                json_object_set_new(g, "state", json_string(state));
        name = json_string_value(json_object_get(w->hello, "name"));
        arch = json_string_value(json_object_get(w->hello, "arch"));
        if (name && !json_object_get(g, "name"))
                json_object_set_new(g, "name", json_string(name));
        if (arch && !json_object_get(g, "arch"))
                json_object_set_new(g, "arch", json_string(arch));
        json_object_set_new(g, "restarts", json_integer(json_integer_value(json_object_get(g, "restarts")) + w->restarts));
        json_object_set_new(g, "busy_s", json_real(json_number_value(json_object_get(g, "busy_s")) + w->busy_s));
        json_object_set_new(g, "workers", json_integer(json_integer_value(json_object_get(g, "workers")) + 1));
        if (w->queued)
                json_object_set_new(g, "queued", json_integer(w->queued->sj->id));
        json_object_set_new(g, "workers_ready", json_integer(json_integer_value(json_object_get(g, "workers_ready")) +
                                                             (w->state == W_IDLE || w->state == W_BUSY ||
                                                              w->state == W_EXITING)));
}

static void status_rebuild(Dispatcher *d)
{
        json_t *st = json_object(), *gpus = json_array(), *layers = json_object();
        int c_ready = 0, c_busy = 0, c_restarts = 0, c_failed = 0, g_ready = 0;
        bool ready;

        gpu_clocks_settle(d);
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                json_t *wl = json_object_get(w->hello, "layers");
                if (wl && !json_object_get(layers, w->spec->name))
                        json_object_set(layers, w->spec->name, wl);
                if (w->spec->role == PROC_COMPILE) {
                        c_ready += w->state == W_IDLE || w->state == W_BUSY;
                        c_busy += w->state == W_BUSY;
                        c_restarts += w->restarts;
                        c_failed += strcmp(worker_state_name(w), "failed") == 0;
                } else {
                        gpu_status_add(gpus, w);
                }
        }
        for (size_t i = 0; i < json_array_size(gpus); i++) {
                json_t *g = json_array_get(gpus, i);
                g_ready += json_integer_value(json_object_get(g, "workers_ready")) > 0;
        }
        ready = c_ready > 0 && !d->stopping;
        json_object_set_new(st, "compile_workers",
                            json_pack("{s:i, s:i, s:i, s:i, s:i}", "configured", d->n_compile, "ready", c_ready, "busy",
                                      c_busy, "restarts", c_restarts, "failed", c_failed));
        json_object_set_new(st, "gpus", gpus);
        json_object_set_new(st, "gpu_ready", json_integer(g_ready));
        json_object_set_new(st, "fault_grace_ms", json_integer(d->fault_grace_now));
        json_object_set_new(st, "layers", layers);
        json_object_set_new(st, "counters",
                            json_pack("{s:I, s:I, s:I, s:I, s:O}", "jobs_done", (json_int_t)d->jobs_done,
                                      "cache_hits", (json_int_t)d->cache_hits, "cache_misses",
                                      (json_int_t)d->cache_misses, "compiles", (json_int_t)d->compiles_sent,
                                      "verdicts", d->verdicts));
        json_object_set_new(st, "ready", json_boolean(ready));
        json_object_set_new(st, "reason",
                            json_string(d->stopping ? "shutting down"
                                        : c_ready == 0 ? "no compile worker is ready"
                                        : (d->n_workers - d->n_compile) == 0
                                                ? "no GPU on this host: compile-only submissions complete, full evaluations wait"
                                        : g_ready == 0 ? "no GPU worker is ready yet: full evaluations wait"
                                                       : "ok"));
        pthread_mutex_lock(&d->status_lock);
        json_decref(d->status);
        d->status = st;
        pthread_mutex_unlock(&d->status_lock);
        d->status_dirty = false;
}

json_t *dispatch_status(Dispatcher *d)
{
        json_t *copy;

        pthread_mutex_lock(&d->status_lock);
        copy = json_deep_copy(d->status);
        pthread_mutex_unlock(&d->status_lock);
        return copy;
}

/* ---- finishing jobs ------------------------------------------------------ */

static const char *job_task_name(const Job *j)
{
        return j->task ? spec_task_name(j->task) : NULL;
}

static void count_verdict(Dispatcher *d, const char *verdict)
{
        json_t *v = json_object_get(d->verdicts, verdict);

        json_object_set_new(d->verdicts, verdict, json_integer(v ? json_integer_value(v) + 1 : 1));
        d->jobs_done++;
        d->status_dirty = true;
}

static void notify_done(Dispatcher *d, int64_t id)
{
        if (d->cfg.waiters)
                waiters_notify(d->cfg.waiters, id);
}

static const char *const owe_what[] = { "recording the result", "re-queueing", "marking it compiled" };

/* The store may take the write later: the storage or the connection failed, not the write itself. */
static bool store_error_transient(int r)
{
        return store_error_is_storage(r) || r == -ENOTCONN || r == -EBUSY || r == -ENOMEM || r == -EAGAIN;
}

/*
 * Try one owed write. A write the store refuses for good becomes an
 * internal_error finish, tried at once. Return: 0 done (or moot: the lease
 * is gone), or the negative errno of a refusal to retry later.
 */
static int owed_try(Dispatcher *d, Owed *o)
{
        int r;

        switch (o->kind) {
        case OWE_FINISH:
                r = store_finish(d->store, o->id, d->owner, o->verdict, o->speedup, o->doc);
                break;
        case OWE_REQUEUE:
                r = store_requeue(d->store, o->id, d->owner, o->stage);
                break;
        default:
                r = store_set_compiled(d->store, o->id, d->owner, o->doc);
        }
        o->tries++;
        if (r < 0 && !store_error_transient(r) && !o->fallback) {
                /* Refused for good (a result the store cannot hold, a bug): never retried
                 * forever behind a paused dispatcher; the job ends as internal_error. */
                json_t *err = pipeline_error("internal", "%s failed: %s (the store refused it; not the kernel's "
                                             "fault)", owe_what[o->kind], strerror(-r));
                json_t *res = pipeline_result(o->task, "internal_error", NULL, NULL, err,
                                              strtoull(jsonutil_str(o->doc, "seed", "0"), NULL, 16));
                log_error("dispatch: job %" PRId64 ": %s failed for good: %s; ending it as internal_error", o->id,
                          owe_what[o->kind], strerror(-r));
                json_decref(err);
                json_decref(o->doc);
                o->doc = res;
                o->kind = OWE_FINISH;
                snprintf(o->verdict, sizeof(o->verdict), "internal_error");
                o->speedup = 0;
                o->fallback = true;
                return owed_try(d, o);
        }
        if (r < 0 && !store_error_transient(r)) {
                log_error("dispatch: job %" PRId64 ": even its internal_error result was refused: %s; it stays "
                          "leased until this process restarts", o->id, strerror(-r));
                return 0;
        }
        if (r < 0)
                return r;
        if (r > 0)
                log_warn("dispatch: job %" PRId64 ": lease lost before %s was recorded%s", o->id, owe_what[o->kind],
                         o->tries > 1 ? " (another host or the reaper took it meanwhile)" : "");
        else if (o->kind == OWE_FINISH) {
                count_verdict(d, o->verdict);
                notify_done(d, o->id);
        }
        if (r == 0 && o->tries > 1)
                log_info("dispatch: job %" PRId64 ": %s succeeded on try %d", o->id, owe_what[o->kind], o->tries);
        return 0;
}

static void owed_free(Owed *o)
{
        if (o) {
                json_decref(o->doc);
                free(o->task);
                free(o);
        }
}

/*
 * Do a store write for job @id now, or keep it to retry (OWED_RETRY_MS)
 * when the store refuses it; takes ownership of @doc. While anything is
 * owed the dispatcher claims nothing new (pump()).
 */
static void owe(Dispatcher *d, OweKind kind, int64_t id, Stage stage, const char *verdict, double speedup,
                json_t *doc, const char *task)
{
        Owed *o = calloc(1, sizeof(*o));
        int r;

        if (!o) {
                /* nothing to keep it in: its lease expires once the process is gone */
                log_error("dispatch: job %" PRId64 ": out of memory", id);
                json_decref(doc);
                return;
        }
        o->kind = kind;
        o->id = id;
        o->stage = stage;
        snprintf(o->verdict, sizeof(o->verdict), "%s", verdict ? verdict : "");
        o->speedup = speedup;
        o->doc = doc;
        o->task = task ? strdup(task) : NULL;
        r = owed_try(d, o);
        if (r == 0) {
                owed_free(o);
                return;
        }
        log_error("dispatch: job %" PRId64 ": %s failed: %s; kept, retried every %d ms (no new claims meanwhile)",
                  id, owe_what[kind], strerror(-r), OWED_RETRY_MS);
        Owed **p = &d->owed;
        while (*p)
                p = &(*p)->next;
        *p = o;
        d->n_owed++;
        d->owed_retry_ms = now_ms(d) + OWED_RETRY_MS;
        d->status_dirty = true;
}

/* Retry the owed writes, oldest first, until one still fails. */
static void owed_retry(Dispatcher *d)
{
        int r = 0;

        while (d->owed && (r = owed_try(d, d->owed)) == 0) {
                Owed *o = d->owed;
                d->owed = o->next;
                d->n_owed--;
                owed_free(o);
                d->status_dirty = true;
        }
        d->owed_retry_ms = now_ms(d) + OWED_RETRY_MS;
        if (r < 0 && d->owed->tries % 30 == 0)
                log_warn("dispatch: %d store write(s) still owed: %s", d->n_owed, strerror(-r));
}

/* Record the final result of a job; takes ownership of @result. */
static void finish(Dispatcher *d, int64_t id, const char *verdict, json_t *result)
{
        double speedup = json_number_value(json_object_get(json_object_get(result, "reward_fields"), "speedup"));

        owe(d, OWE_FINISH, id, STAGE_COMPILE, verdict, speedup, result,
            json_string_value(json_object_get(result, "task")));
}

/* Give a held job back to @stage's queue (its attempt stays counted); @task: its task name or NULL. */
static void requeue(Dispatcher *d, int64_t id, Stage stage, const char *task)
{
        owe(d, OWE_REQUEUE, id, stage, NULL, 0, NULL, task);
}

static json_t *compile_section_of(const Job *j, Slot s)
{
        const Artifact *a = j->art[s];

        return a ? pipeline_compile_section(a->compile, a->cache_hit) : NULL;
}

static void job_free(Job *j)
{
        if (!j)
                return;
        store_job_free(j->sj);
        json_decref(j->gjob);
        spec_task_free(j->own_task);
        artifact_free(j->art[0]);
        artifact_free(j->art[1]);
        free(j);
}

static void job_unlink(Dispatcher *d, Job *j)
{
        for (Job **p = &d->jobs; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        d->n_jobs--;
                        return;
                }
}

/* End a compile-stage job with a verdict decided here. */
static void job_finish(Dispatcher *d, Job *j, const char *verdict, json_t *error)
{
        json_t *compile = compile_section_of(j, SLOT_CAND);
        json_t *res = pipeline_result(job_task_name(j), verdict, compile, NULL, error, j->seed);

        json_decref(compile);
        json_decref(error);
        finish(d, j->sj->id, verdict, res);
        job_unlink(d, j);
        job_free(j);
}

/* ---- workers ------------------------------------------------------------- */

static void worker_start(Worker *w);
static void pump(Dispatcher *d);
static void compile_done(Dispatcher *d, CompileReq *req, json_t *result, const uint8_t *cubin, size_t len,
                         bool cacheable);
static void gpu_done(Dispatcher *d, Worker *w, Job *j, json_t *result);
static void gpu_invalid(Dispatcher *d, Worker *w, Job *j, const char *why);
static void compile_req_fault(Dispatcher *d, CompileReq *req, const char *why);
static void compile_req_hung(Dispatcher *d, CompileReq *req, double limit_s);
static bool gpu_verdict_valid(const char *verdict);
static int run_one(Dispatcher *d, Worker *w);
static void worker_begin_job(Dispatcher *d, Worker *w, Job *j);
static void worker_orphan_queued(Dispatcher *d, Worker *w);

typedef struct WriteReq {
        uv_write_t req;
        uint8_t *buf;
} WriteReq;

static void on_write(uv_write_t *req, int status)
{
        WriteReq *wr = (WriteReq *)req;

        if (status < 0)
                log_debug("dispatch: write to worker failed: %s", uv_strerror(status));
        free(wr->buf);
        free(wr);
}

static int worker_send(Worker *w, uint32_t type, json_t *msg, const uint8_t *blob1, size_t len1,
                       const uint8_t *blob2, size_t len2)
{
        char *json = json_dumps(msg, JSON_COMPACT);
        size_t jl = json ? strlen(json) : 0, total = FRAME_HEADER_BYTES + jl + len1 + len2;
        WriteReq *wr = NULL;
        uint8_t *p;
        uv_buf_t buf;
        int r = -ENOMEM;

        if (!json)
                goto out;
        if (jl > LIMIT_FRAME_JSON_BYTES || len1 + len2 > LIMIT_FRAME_BLOB_BYTES) {
                r = -EMSGSIZE;
                goto out;
        }
        wr = calloc(1, sizeof(*wr));
        if (!wr || !(wr->buf = malloc(total)))
                goto out;
        p = wr->buf;
        uint32_t h[4] = { FRAME_MAGIC, type, (uint32_t)jl, (uint32_t)(len1 + len2) };
        for (int i = 0; i < 4; i++)
                for (int b = 0; b < 4; b++)
                        *p++ = (uint8_t)(h[i] >> (8 * b));
        memcpy(p, json, jl);
        p += jl;
        if (len1)
                memcpy(p, blob1, len1), p += len1;
        if (len2)
                memcpy(p, blob2, len2);
        buf = uv_buf_init((char *)wr->buf, (unsigned)total);
        r = uv_write(&wr->req, (uv_stream_t *)&w->to_child, &buf, 1, on_write);
        if (r == 0)
                wr = NULL;
out:
        if (wr)
                free(wr->buf);
        free(wr);
        free(json);
        return r;
}

static void worker_kill(Worker *w, const char *why)
{
        if (w->state == W_STOPPED)
                return;
        w->dying = true;
        if (w->d->stopping)
                log_info("dispatch: stopping %s worker %d (pid %d)", w->spec->name, w->index, w->proc.pid);
        else
                log_warn("dispatch: killing %s worker %d (pid %d): %s", w->spec->name, w->index, w->proc.pid, why);
        /* The worker is the leader of its own process group (UV_PROCESS_DETACHED). */
        if (w->proc.pid > 0 && kill(-w->proc.pid, SIGKILL) < 0)
                kill(w->proc.pid, SIGKILL);
}

static void on_handle_closed(uv_handle_t *h)
{
        Worker *w = h->data;

        if (--w->handles_open == 0 && !w->d->stopping) {
                double backoff = 0;
                if (w->failures > 0) {
                        backoff = w->spec->backoff_min_s * pow(2, w->failures - 1);
                        if (backoff > w->spec->backoff_max_s)
                                backoff = w->spec->backoff_max_s;
                }
                w->restart_at_ms = now_ms(w->d) + (uint64_t)(backoff * 1000);
                if (backoff > 0)
                        log_info("dispatch: restarting %s worker %d in %.2f s (%d consecutive failures)",
                                 w->spec->name, w->index, backoff, w->failures);
                else if (w->state == W_STOPPED)
                        worker_start(w); /* now, not at the next tick: a GPU worker's start is the slow part */
        }
}

/* The worker's process is gone: settle its request, then restart later. */
static void on_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
        Worker *w = proc->data;
        Dispatcher *d = w->d;
        bool was_ready = w->hello != NULL && !json_is_false(json_object_get(w->hello, "ok"));

        log_info("dispatch: %s worker %d (pid %d) exited: status %" PRId64 ", signal %d", w->spec->name, w->index,
                 proc->pid, status, sig);
        worker_orphan_queued(d, w); /* it never started: no attempt is charged */
        if (w->req) {
                CompileReq *req = w->req;
                w->req = NULL;
                req->in_flight = false;
                if (w->killed_by_watchdog)
                        compile_req_hung(d, req, (double)(w->deadline_ms - w->sent_at_ms) / 1000.0);
                else
                        compile_req_fault(d, req, sig ? "the compile worker died" : "the compile worker exited");
        }
        if (w->job) {
                Job *j = w->job;
                w->job = NULL;
                if (w->killed_by_watchdog) {
                        json_t *err = pipeline_error("timeout", "the candidate did not finish within %.0f s and "
                                                     "its worker was killed (infinite loop?)",
                                                     (double)(w->deadline_ms - w->sent_at_ms) / 1000.0);
                        json_t *compile = json_object_get(j->sj->compile, "candidate");
                        json_t *res = pipeline_result(job_task_name(j), "timeout", compile, NULL, err, j->seed);
                        json_decref(err);
                        finish(d, j->sj->id, "timeout", res);
                } else if (j->sj->attempts >= d->cfg.max_attempts) {
                        json_t *err = pipeline_error("internal", "the GPU worker died %d times during this job "
                                                     "(infrastructure fault, not the kernel's)", j->sj->attempts);
                        json_t *res = pipeline_result(job_task_name(j), "internal_error", NULL, NULL, err, j->seed);
                        json_decref(err);
                        finish(d, j->sj->id, "internal_error", res);
                } else {
                        log_warn("dispatch: job %" PRId64 " goes back to the queue: its GPU worker died", j->sj->id);
                        requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                }
                job_free(j);
        }
        /* A crash before HELLO, or without a RESULT for a request, counts as a failure. */
        if (!was_ready || (!w->result_seen && !w->killed_by_watchdog && !d->stopping && status != 0))
                w->failures++;
        else
                w->failures = 0;
        if (w->malformed)
                w->failures++;
        w->state = W_STOPPED;
        w->restarts++;
        json_decref(w->hello);
        w->hello = NULL;
        frame_decoder_clear(&w->dec);
        d->status_dirty = true;
        uv_close((uv_handle_t *)&w->proc, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&w->to_child))
                uv_close((uv_handle_t *)&w->to_child, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&w->from_child))
                uv_close((uv_handle_t *)&w->from_child, on_handle_closed);
        pump(d);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        (void)h;
        buf->base = malloc(suggested);
        buf->len = buf->base ? suggested : 0;
}

/*
 * `kevald eval --dump DIR`: the GPU worker streams the reference side's
 * buffers in PROGRESS frames; write each chunk to DIR/<shape>/<buffer>.<when>.bin.
 * Names come from the resolved job (validated names), never from paths.
 */
static void dump_chunk(Dispatcher *d, json_t *info, const uint8_t *blob, size_t len)
{
        const char *shape = json_string_value(json_object_get(info, "shape"));
        const char *buffer = json_string_value(json_object_get(info, "buffer"));
        const char *when = json_string_value(json_object_get(info, "when"));
        json_int_t offset = json_integer_value(json_object_get(info, "offset"));
        char path[PATH_MAX];
        FILE *f;

        if (!shape || !buffer || !when || offset < 0 || strpbrk(shape, "/.") || strpbrk(buffer, "/.") ||
            (strcmp(when, "input") != 0 && strcmp(when, "output") != 0)) {
                log_warn("dispatch: ignoring a malformed dump chunk");
                return;
        }
        snprintf(path, sizeof(path), "%s/%s", d->cfg.dump_dir, shape);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/%s.%s.bin", d->cfg.dump_dir, shape, buffer, when);
        f = fopen(path, offset == 0 ? "wb" : "r+b");
        if (!f || fseeko(f, (off_t)offset, SEEK_SET) != 0 || fwrite(blob, 1, len, f) != len)
                log_error("dispatch: writing dump file '%s' failed: %s", path, strerror(errno));
        if (f)
                fclose(f);
}

static void worker_on_frame(Worker *w, Frame *f)
{
        Dispatcher *d = w->d;
        char why[RESULTCHECK_WHY_BYTES];
        json_error_t jerr;
        json_t *msg = json_loadb(f->json, f->json_len, 0, &jerr);

        if (!json_is_object(msg)) {
                w->malformed = true;
                worker_kill(w, "sent a frame that is not a JSON object");
                goto out;
        }
        switch (f->type) {
        case FRAME_HELLO:
                if (w->state != W_STARTING) {
                        w->malformed = true;
                        worker_kill(w, "sent HELLO twice");
                        break;
                }
                if (json_is_false(json_object_get(msg, "ok"))) {
                        char *e = json_dumps(json_object_get(msg, "error"), JSON_COMPACT);
                        log_error("dispatch: %s worker %d failed to start: %s", w->spec->name, w->index,
                                  e ? e : "no reason given");
                        free(e);
                        w->hello = json_incref(msg); /* its layers still show in /readyz */
                        worker_kill(w, "start-up failed");
                        d->status_dirty = true;
                        break;
                }
                w->hello = json_incref(msg);
                w->state = W_IDLE;
                if (w->spec->role == PROC_COMPILE) {
                        const char *v = json_string_value(json_object_get(msg, "nvrtc"));
                        if (v)
                                snprintf(d->nvrtc, sizeof(d->nvrtc), "%s", v);
                } else {
                        const char *arch = json_string_value(json_object_get(msg, "arch"));
                        json_t *so = json_object_get(msg, "max_shared_optin");
                        if (arch && strcmp(arch, d->arch) != 0) {
                                log_info("dispatch: GPU %d is %s: compiling for it", w->index, arch);
                                free(d->arch);
                                d->arch = strdup(arch);
                        }
                        if (json_is_integer(so))
                                d->max_shared_optin = (long)json_integer_value(so);
                }
                log_info("dispatch: %s worker %d ready (pid %d)%s%s", w->spec->name, w->index, w->proc.pid,
                         w->spec->role == PROC_GPU ? ": " : "",
                         w->spec->role == PROC_GPU ? jsonutil_str(msg, "name", "?") : "");
                {
                        char *layers = json_dumps(json_object_get(msg, "layers"), JSON_COMPACT);
                        log_info("dispatch: %s worker sandbox layers: %s", w->spec->name, layers ? layers : "none reported");
                        free(layers);
                }
                d->status_dirty = true;
                break;
        case FRAME_PROGRESS:
                if (json_object_get(msg, "dump") && d->cfg.dump_dir && w->job)
                        dump_chunk(d, json_object_get(msg, "dump"), f->blob, f->blob_len);
                break;
        case FRAME_RESULT:
                if (w->state != W_BUSY) {
                        w->malformed = true;
                        worker_kill(w, "sent a RESULT without a job");
                        break;
                }
                /* Nothing a worker says is believed before it is checked: an invalid
                 * RESULT is the worker's fault (killed; the request counts an attempt). */
                if (w->req ? resultcheck_compile(msg, f->blob, f->blob_len, w->req->arch, why) != 0
                           : resultcheck_gpu(msg, (double)d->cfg.job_timeout_s * 1000.0, why) != 0) {
                        if (w->job) {
                                Job *j = w->job;
                                w->job = NULL;
                                gpu_invalid(d, w, j, why);
                        } else {
                                CompileReq *req = w->req;
                                w->req = NULL;
                                req->in_flight = false;
                                w->malformed = true;
                                worker_kill(w, "sent an invalid compile RESULT");
                                log_warn("dispatch: compile worker %d's RESULT: %s", w->index, why);
                                compile_req_fault(d, req, why);
                        }
                        d->status_dirty = true;
                        break;
                }
                w->result_seen = true;
                w->failures = 0;
                w->state = W_IDLE;
                w->busy_s += (double)(now_ms(d) - w->sent_at_ms) / 1000.0;
                if (w->job && (json_is_true(json_object_get(msg, "exiting")) ||
                               json_is_string(json_object_get(msg, "exiting")))) {
                        w->state = W_EXITING;
                        w->deadline_ms = now_ms(d) + EXIT_GRACE_MS;
                        /* after a sticky fault the context is dead and nothing of
                         * it runs: the standby may start at once; otherwise (a
                         * spinning kernel) the GPU waits for the process to go */
                        w->holds_gpu = strcmp(jsonutil_str(msg, "exiting", ""), "sticky") != 0;
                }
                if (w->req) {
                        CompileReq *req = w->req;
                        const char *err = json_string_value(json_object_get(msg, "error"));
                        w->req = NULL;
                        req->in_flight = false;
                        d->compile_answers++;
                        compile_done(d, req, msg, f->blob, f->blob_len, !err || strcmp(err, "compile") == 0);
                } else if (w->job) {
                        /* Keep the GPU busy. The job queued behind this one
                         * (prefetch) is already running in the worker; an idle
                         * worker is handed its next job before the result is
                         * written and waiters woken. An exiting worker runs
                         * nothing more: its queued job goes to the next worker,
                         * on a standby of the same GPU once the process is gone. */
                        Job *done = w->job;
                        bool valid = gpu_verdict_valid(json_string_value(json_object_get(msg, "verdict")));
                        w->job = NULL;
                        if (w->state == W_EXITING) {
                                worker_orphan_queued(d, w);
                        } else if (w->queued && valid) {
                                Job *next = w->queued;
                                w->queued = NULL;
                                worker_begin_job(d, w, next);
                        }
                        if (!d->stopping && !d->owed && valid &&
                            (w->state == W_IDLE || (w->state == W_BUSY && !w->queued && !d->cfg.no_prefetch)))
                                run_one(d, w);
                        gpu_done(d, w, done, msg);
                }
                d->status_dirty = true;
                break;
        default:
                w->malformed = true;
                worker_kill(w, "sent a frame of an unexpected type");
        }
out:
        json_decref(msg);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
        Worker *w = s->data;
        size_t off = 0;

        if (nread < 0) {
                uv_read_stop(s);
                free(buf->base);
                return; /* EOF or error: on_exit_cb settles the worker */
        }
        /* A worker being killed is no longer believed: what it still says
         * (the RESULT of a job that was next in its pipe) is dropped. */
        while (off < (size_t)nread && w->state != W_STOPPED && !w->dying) {
                Frame f = { 0 };
                size_t used = 0;
                int r = frame_decoder_feed(&w->dec, (uint8_t *)buf->base + off, (size_t)nread - off, &used, &f);
                off += used;
                if (r == FRAME_E_AGAIN)
                        break;
                if (r != 0) {
                        w->malformed = true;
                        worker_kill(w, r == FRAME_E_TOO_LARGE ? "sent an oversized frame" : "sent a malformed frame");
                        uv_read_stop(s);
                        break;
                }
                worker_on_frame(w, &f);
                frame_clear(&f);
        }
        free(buf->base);
        pump(w->d);
}

static void worker_start(Worker *w)
{
        Dispatcher *d = w->d;
        char path[PATH_MAX], **env = NULL;
        char *args[3];
        uv_process_options_t opt = { 0 };
        uv_stdio_container_t stdio[3];
        int r;

        snprintf(path, sizeof(path), "%s/%s", d->libexec_dir, w->spec->executable);
        args[0] = path;
        args[1] = d->cfg.sandbox ? NULL : "--no-sandbox";
        args[2] = NULL;
        if (proctab_env(w->spec->role, w->index, &env) < 0)
                return;
        uv_pipe_init(&d->loop, &w->to_child, 0);
        uv_pipe_init(&d->loop, &w->from_child, 0);
        w->to_child.data = w->from_child.data = w->proc.data = w;
        stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
        stdio[0].data.stream = (uv_stream_t *)&w->to_child;
        stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
        stdio[1].data.stream = (uv_stream_t *)&w->from_child;
        stdio[2].flags = UV_INHERIT_FD;
        stdio[2].data.fd = 2;
        opt.file = path;
        opt.args = args;
        opt.env = env;
        opt.cwd = "/";
        opt.flags = UV_PROCESS_DETACHED;
        opt.stdio_count = 3;
        opt.stdio = stdio;
        opt.exit_cb = on_exit_cb;
        frame_decoder_init(&w->dec);
        w->killed_by_watchdog = w->result_seen = w->malformed = w->dying = false;
        w->handles_open = 3;
        r = uv_spawn(&d->loop, &w->proc, &opt);
        proctab_env_free(env);
        if (r < 0) {
                log_error("dispatch: starting %s failed: %s", path, uv_strerror(r));
                d->status_dirty = true;
                w->failures++;
                w->state = W_STOPPED;
                w->restarts++;
                uv_close((uv_handle_t *)&w->proc, on_handle_closed);
                uv_close((uv_handle_t *)&w->to_child, on_handle_closed);
                uv_close((uv_handle_t *)&w->from_child, on_handle_closed);
                return;
        }
        /* Compiles are throughput work and may fill every core (one worker
         * per core by default); the GPU workers' launches and this loop are
         * on the GPUs' critical path. A higher nice value (a smaller CPU
         * share under contention, none lost on an idle host) keeps a
         * compile burst from starving them. Relative to the server's own
         * nice value; set on the new process's only thread (its threads
         * inherit it). */
        if (w->spec->role == PROC_COMPILE && d->cfg.compile_nice > 0) {
                int own, want;
                errno = 0;
                own = getpriority(PRIO_PROCESS, 0);
                want = (errno ? 0 : own) + d->cfg.compile_nice;
                if (setpriority(PRIO_PROCESS, (id_t)w->proc.pid, want > 19 ? 19 : want) < 0)
                        log_warn("dispatch: cannot lower compile worker %d's priority: %s", w->index, strerror(errno));
        }
        w->state = W_STARTING;
        w->sent_at_ms = now_ms(d);
        w->deadline_ms = w->sent_at_ms + (w->spec->role == PROC_GPU ? 60000 : 30000);
        uv_read_start((uv_stream_t *)&w->from_child, on_alloc, on_read);
        d->status_dirty = true;
}

/* ---- compile requests ----------------------------------------------------- */

static void compile_req_free(CompileReq *req)
{
        if (!req)
                return;
        free(req->language);
        free(req->arch);
        json_decref(req->options);
        json_decref(req->name_expressions);
        free(req->source);
        free(req->waiting);
        free(req->slots);
        free(req);
}

static void job_artifact_ready(Dispatcher *d, Job *j, Slot slot, Artifact *a);

/* Deliver a compile outcome to every job waiting for it. */
static void compile_done(Dispatcher *d, CompileReq *req, json_t *result, const uint8_t *cubin, size_t len,
                         bool cacheable)
{
        for (CompileReq **p = &d->compiles; *p; p = &(*p)->next)
                if (*p == req) {
                        *p = req->next;
                        break;
                }
        if (cacheable && store_cache_put(d->store, req->key, result, cubin, len) < 0)
                log_warn("dispatch: storing a compile result in the cache failed");
        for (size_t i = 0; i < req->n_waiting; i++) {
                Artifact *a = artifact_new(req->key, result, cubin, len, 0);
                if (req->slots[i] == SLOT_REF && a && json_is_true(json_object_get(result, "ok")))
                        ref_remember(d, a);
                job_artifact_ready(d, req->waiting[i], req->slots[i], a);
        }
        compile_req_free(req);
}

/*
 * A request ended abnormally on its worker (it died, exited, or sent an
 * invalid RESULT): that counts an attempt; it goes to the next worker until
 * max_attempts, then every job waiting for it ends as internal_error.
 */
static void compile_req_fault(Dispatcher *d, CompileReq *req, const char *why)
{
        json_t *res;

        if (++req->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: compile request goes to another worker (attempt %d of %d): %s", req->attempts + 1,
                         d->cfg.max_attempts, why);
                return; /* it stays queued */
        }
        res = json_pack("{s:b, s:s, s:s+}", "ok", 0, "error", "internal", "log",
                        "the compile worker failed on this source on every attempt (an infrastructure fault, not the "
                        "source's); last: ", why);
        compile_done(d, req, res, NULL, 0, false);
        json_decref(res);
}

/*
 * The watchdog killed a compile worker that did not answer @limit_s after
 * the request: the worker's own time limit answers a compile that runs too
 * long (a timeout RESULT), so silence is the worker's fault first. The
 * request is retried once on a fresh worker; if that one stops answering
 * too, the source is blamed (compile_error) only when some other compile
 * was answered since the first hang (the workers are sound); otherwise
 * every worker hangs, and the jobs end as internal_error. The log says which.
 */
static void compile_req_hung(Dispatcher *d, CompileReq *req, double limit_s)
{
        bool first = req->hangs++ == 0;
        json_t *res;
        char log[320];

        req->attempts++;
        if (first)
                req->answers_at_hang = d->compile_answers;
        if (first && req->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: a compile worker stopped answering (killed after %.0f s): the request goes to a "
                         "fresh worker", limit_s);
                return;
        }
        if (!first && d->compile_answers > req->answers_at_hang) {
                snprintf(log, sizeof(log), "compilation did not finish: the compile worker stopped answering on this "
                         "source twice, on two workers (each killed after %.0f s), while other compiles completed; "
                         "the source is taken to be the cause (runaway template instantiation or macro expansion?)",
                         limit_s);
                res = json_pack("{s:b, s:s, s:s, s:b}", "ok", 0, "error", "timeout", "log", log, "log_truncated", 0);
        } else {
                snprintf(log, sizeof(log), "the compile worker stopped answering (killed after %.0f s) %s: an "
                         "infrastructure fault, not the source's", limit_s,
                         first ? "on the last attempt this source had"
                               : "on this source twice while no other compile completed");
                res = json_pack("{s:b, s:s, s:s}", "ok", 0, "error", "internal", "log", log);
        }
        compile_done(d, req, res, NULL, 0, false);
        json_decref(res);
}

static int compile_req_wait(CompileReq *req, Job *j, Slot slot)
{
        if (req->n_waiting == req->cap_waiting) {
                size_t cap = req->cap_waiting ? req->cap_waiting * 2 : 4;
                Job **w = realloc(req->waiting, cap * sizeof(*w));
                Slot *s;
                if (!w)
                        return -ENOMEM;
                req->waiting = w;
                s = realloc(req->slots, cap * sizeof(*s));
                if (!s)
                        return -ENOMEM;
                req->slots = s;
                req->cap_waiting = cap;
        }
        req->waiting[req->n_waiting] = j;
        req->slots[req->n_waiting++] = slot;
        j->pending++;
        return 0;
}

/* Get the artifact for (source, options...) into @slot of @j: cache, coalesced request, or new request. */
static int job_need(Dispatcher *d, Job *j, Slot slot, const char *language, json_t *options, json_t *names,
                    const char *source)
{
        /* a fenced build for every candidate a GPU may run: a compile-only one too where this host
         * has a GPU (its cached artifact serves a later evaluation of the same source), not on a
         * host without one (the fenced build is half again the compile's time, and only a GPU run
         * uses it); never for a trusted reference */
        bool compile_only = j->sj->mode && !strcmp(j->sj->mode, "compile");
        bool fence = slot == SLOT_CAND && !d->cfg.no_fence && (!compile_only || d->n_clocks > 0);
        uint8_t key[32];
        size_t len = strlen(source);
        CompileReq *req;

        pipeline_cache_key(language, d->arch, d->nvrtc, fence, options, names, source, len, key);
        j->art[slot] = artifact_lookup(d, key, slot == SLOT_REF);
        if (j->art[slot]) {
                d->cache_hits++;
                return 0;
        }
        d->cache_misses++;
        for (req = d->compiles; req; req = req->next)
                if (memcmp(req->key, key, 32) == 0)
                        return compile_req_wait(req, j, slot);
        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        memcpy(req->key, key, 32);
        req->language = strdup(language);
        req->arch = strdup(d->arch);
        req->options = options ? json_incref(options) : json_array();
        req->name_expressions = names ? json_incref(names) : json_array();
        req->source = strdup(source);
        req->source_len = len;
        req->fence = fence;
        if (!req->language || !req->arch || !req->source || compile_req_wait(req, j, slot) < 0) {
                compile_req_free(req);
                return -ENOMEM;
        }
        /* append: oldest first */
        CompileReq **p = &d->compiles;
        while (*p)
                p = &(*p)->next;
        *p = req;
        return 0;
}

static void job_compiled(Dispatcher *d, Job *j);

static void job_artifact_ready(Dispatcher *d, Job *j, Slot slot, Artifact *a)
{
        j->art[slot] = a;
        if (--j->pending == 0)
                job_compiled(d, j);
}

/* Both CUBINs are in: decide what happens to the job. */
static void job_compiled(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        json_t *cand = j->art[SLOT_CAND] ? j->art[SLOT_CAND]->compile : NULL;
        json_t *ref = j->art[SLOT_REF] ? j->art[SLOT_REF]->compile : NULL;
        bool full = strcmp(j->sj->mode, "full") == 0;
        json_t *plan = json_object_get(req, "plan");
        SpecError err = { 0 };
        json_t *section;
        char hex[65];

        if (!j->art[SLOT_CAND]) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "out of memory"));
                return;
        }
        if (!json_is_true(json_object_get(cand, "ok"))) {
                const char *e = json_string_value(json_object_get(cand, "error"));
                const char *log = jsonutil_str(cand, "log", "");
                bool hung = strstr(log, "stopped answering") != NULL; /* compile_req_hung() blamed the source */
                if (e && strcmp(e, "internal") == 0)
                        job_finish(d, j, "internal_error", pipeline_error("internal", "%s",
                                   jsonutil_str(cand, "log", "compile worker failure")));
                else if (e && strcmp(e, "timeout") == 0)
                        job_finish(d, j, "compile_error", pipeline_error("compile",
                                   "compilation exceeded the time limit%s%s", hung ? ": " : "", hung ? log : ""));
                else
                        job_finish(d, j, "compile_error", pipeline_error("compile", "the candidate did not compile"));
                return;
        }
        if (j->task && json_is_array(plan) &&
            spec_check_plan(j->task, plan, json_object_get(req, "scratch"), cand, d->max_shared_optin, &err) != 0) {
                job_finish(d, j, "rejected", pipeline_error("plan", "%s (at %s)", err.message, err.pointer));
                return;
        }
        if (!full) {
                job_finish(d, j, "compiled", NULL);
                return;
        }
        if (!ref || !json_is_true(json_object_get(ref, "ok"))) {
                job_finish(d, j, "internal_error",
                           pipeline_error("internal", "the reference of task '%s' does not compile: %s",
                                          job_task_name(j), ref ? jsonutil_str(ref, "log", "") : "?"));
                return;
        }
        memset(&err, 0, sizeof(err));
        json_t *ref_plan = json_object_get(json_object_get(spec_task_json(j->task), "reference"), "plan");
        if (spec_check_plan(j->task, ref_plan, json_object_get(json_object_get(spec_task_json(j->task), "reference"), "scratch"),
                            ref, 0, &err) != 0) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "task '%s': the reference plan does not "
                                                                  "match its kernels: %s", job_task_name(j), err.message));
                return;
        }
        /* Keep what the run stage needs: both compile sections and the cache keys. */
        section = json_object();
        json_object_set_new(section, "candidate", compile_section_of(j, SLOT_CAND));
        hex_encode(j->art[SLOT_CAND]->key, 32, hex);
        json_object_set_new(section, "candidate_key", json_string(hex));
        hex_encode(j->art[SLOT_REF]->key, 32, hex);
        json_object_set_new(section, "reference_key", json_string(hex));
        json_object_set_new(section, "reference", json_deep_copy(ref));
        owe(d, OWE_COMPILED, j->sj->id, STAGE_COMPILE, NULL, 0, section, j->sj->task);
        job_unlink(d, j);
        job_free(j);
}

/* ---- claiming ----------------------------------------------------------------- */

static int job_resolve_task(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        json_t *spec = json_object_get(req, "task_spec");
        SpecError err = { 0 };

        if (spec) {
                int r = spec_task_parse(spec, NULL, &j->own_task, &err);
                if (r != 0)
                        return r;
                j->task = j->own_task;
        } else if (j->sj->task) {
                j->task = d->cfg.tasks ? tasklib_get(d->cfg.tasks, j->sj->task) : NULL;
                if (!j->task)
                        return -ENOENT;
        }
        return 0;
}

static Job *job_new(Dispatcher *d, StoreJob *sj)
{
        Job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->sj = sj;
        j->seed = d->cfg.has_fixed_seed ? d->cfg.fixed_seed : pipeline_seed(d->secret, sj->id, sj->attempts);
        j->claimed_ms = now_ms(d);
        return j;
}

/* Start the compile stage of a claimed job. */
static void job_begin_compile(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        const char *lang = jsonutil_str(req, "language", "cuda");
        const char *src = json_string_value(json_object_get(req, "source"));
        int r;

        j->next = d->jobs;
        d->jobs = j;
        d->n_jobs++;
        if (job_resolve_task(d, j) != 0) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "task '%s' is no longer available",
                                                                  j->sj->task ? j->sj->task : "(inline)"));
                return;
        }
        j->pending = 1; /* held while requests are made, so none completes the job early */
        r = job_need(d, j, SLOT_CAND, lang, json_object_get(req, "options"), json_object_get(req, "name_expressions"),
                     src ? src : "");
        if (r == 0 && strcmp(j->sj->mode, "full") == 0 && j->task) {
                json_t *ref = json_object_get(spec_task_json(j->task), "reference");
                const char *rsrc = spec_task_reference_source(j->task);
                r = job_need(d, j, SLOT_REF, "cuda", spec_task_reference_options(j->task),
                             json_object_get(ref, "name_expressions"), rsrc ? rsrc : "");
        }
        if (r < 0) {
                /* Give it back rather than leave it to the reaper: this process renews
                 * its leases, so a job it holds but forgot would never expire. */
                log_error("dispatch: job %" PRId64 ": %s; back to the queue", j->sj->id, strerror(-r));
                if (j->pending == 1) {
                        requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task);
                        job_unlink(d, j);
                        job_free(j);
                        return;
                }
                /* a request it waits for still completes it (a missing artifact ends it as internal_error) */
        }
        if (--j->pending == 0)
                job_compiled(d, j);
}

/* Is a worker of GPU @index running a job, or on its way out after one? */
static bool gpu_reserved(Dispatcher *d, int index)
{
        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (w->spec->role == PROC_GPU && w->index == index && w->state != W_STOPPED &&
                    (w->state == W_BUSY || (w->state == W_EXITING && w->holds_gpu) || w->dying))
                        return true;
        }
        return false;
}

/* An idle worker of @role; for GPU workers, one whose GPU is not reserved. */
static Worker *idle_worker(Dispatcher *d, ProcRole role)
{
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                if (w->spec->role == role && w->state == W_IDLE && !w->dying &&
                    (role != PROC_GPU || !gpu_reserved(d, w->index)))
                        return w;
        }
        return NULL;
}

static void send_compiles(Dispatcher *d)
{
        for (CompileReq *req = d->compiles; req; req = req->next) {
                Worker *w;
                json_t *msg;
                if (req->in_flight)
                        continue;
                w = idle_worker(d, PROC_COMPILE);
                if (!w)
                        return;
                msg = json_pack("{s:I, s:s, s:s, s:O, s:O, s:i, s:b}", "id", (json_int_t)d->compiles_sent + 1,
                                "language", req->language, "arch", req->arch, "options", req->options,
                                "name_expressions", req->name_expressions, "deadline_ms", d->cfg.compile_timeout_ms,
                                "fence", req->fence);
                if (!msg || worker_send(w, FRAME_JOB, msg, (const uint8_t *)req->source, req->source_len, NULL, 0) < 0) {
                        json_decref(msg);
                        worker_kill(w, "could not send a job");
                        return;
                }
                json_decref(msg);
                d->compiles_sent++;
                req->in_flight = true;
                w->req = req;
                w->state = W_BUSY;
                w->result_seen = false;
                w->sent_at_ms = now_ms(d);
                w->deadline_ms = w->sent_at_ms + (uint64_t)d->cfg.compile_timeout_ms + WATCHDOG_GRACE_MS;
                d->status_dirty = true;
        }
}

static Artifact *artifact_by_hex(Dispatcher *d, const char *hex)
{
        uint8_t key[32];

        if (!hex || strlen(hex) != 64)
                return NULL;
        for (int i = 0; i < 32; i++) {
                unsigned v;
                if (sscanf(hex + 2 * i, "%2x", &v) != 1)
                        return NULL;
                key[i] = (uint8_t)v;
        }
        return artifact_lookup(d, key, false);
}

static bool gpu_verdict_valid(const char *verdict)
{
        static const char *const allowed[] = { "correct", "incorrect", "runtime_error", "timeout", "rejected",
                                               "internal_error" };

        for (size_t i = 0; verdict && i < sizeof(allowed) / sizeof(allowed[0]); i++)
                if (strcmp(verdict, allowed[i]) == 0)
                        return true;
        return false;
}

/*
 * Claim the next compiled job and build its JOB. Return: 1 with *@ret_job
 * set (ready to send), 1 with NULL (the job ended here: its task is gone,
 * its plan no longer resolves, or its CUBINs are back to compiling), 0
 * nothing to claim, <0 error.
 */
static int run_claim(Dispatcher *d, Job **ret_job)
{
        StoreJob *sj = NULL;
        Job *j = NULL;
        json_t *gjob = NULL;
        SpecError err = { 0 };
        int r = store_claim_next(d->store, STAGE_RUN, d->owner, d->cfg.lease_s, &sj);

        *ret_job = NULL;
        if (r != 0)
                return r == STORE_E_EMPTY ? 0 : r;
        j = job_new(d, sj);
        if (!j) {
                requeue(d, sj->id, STAGE_RUN, sj->task);
                store_job_free(sj);
                return -ENOMEM;
        }
        if (job_resolve_task(d, j) != 0 || !j->task) {
                json_t *e = pipeline_error("internal", "task '%s' is no longer available",
                                           sj->task ? sj->task : "(inline)");
                json_t *res = pipeline_result(sj->task, "internal_error", NULL, NULL, e, j->seed);
                json_decref(e);
                finish(d, sj->id, "internal_error", res);
                job_free(j);
                return 1;
        }
        j->art[SLOT_CAND] = artifact_by_hex(d, json_string_value(json_object_get(sj->compile, "candidate_key")));
        j->art[SLOT_REF] = artifact_by_hex(d, json_string_value(json_object_get(sj->compile, "reference_key")));
        if (!j->art[SLOT_CAND] || !j->art[SLOT_REF]) {
                /* The cache lost a CUBIN: compile again. */
                requeue(d, sj->id, STAGE_COMPILE, sj->task);
                job_free(j);
                return 1;
        }
        r = spec_resolve(j->task, sj->request, j->art[SLOT_CAND]->compile, j->art[SLOT_REF]->compile, sj->id, j->seed,
                         &gjob, &err);
        if (r != 0) {
                json_t *e = pipeline_error("plan", "%s (at %s)", err.message, err.pointer);
                json_t *res = pipeline_result(job_task_name(j), "rejected", json_object_get(sj->compile, "candidate"),
                                              NULL, e, j->seed);
                json_decref(e);
                finish(d, sj->id, "rejected", res);
                job_free(j);
                return 1;
        }
        /* the candidate's plain build, its fenced build (none with fence = false: the cache key
         * asked for none), the reference's plain build */
        {
                const Artifact *ca = j->art[SLOT_CAND], *ra = j->art[SLOT_REF];
                json_t *cubins = json_pack("{s:{s:i, s:I}, s:{s:I, s:I}}", "candidate", "offset", 0, "size",
                                           (json_int_t)ca->plain_len, "reference", "offset",
                                           (json_int_t)ca->cubin_len, "size", (json_int_t)ra->plain_len);
                if (cubins && ca->fenced_len)
                        json_object_set_new(cubins, "candidate_fenced",
                                            json_pack("{s:I, s:I}", "offset", (json_int_t)ca->plain_len, "size",
                                                      (json_int_t)ca->fenced_len));
                json_object_set_new(gjob, "cubins", cubins);
        }
        json_object_set_new(gjob, "deadline_ms", json_integer((json_int_t)(d->cfg.job_timeout_s * 1000)));
        json_object_set_new(gjob, "launch_timeout_ms", json_integer(d->cfg.launch_timeout_ms));
        if (d->cfg.launch_factor > 0) {
                json_object_set_new(gjob, "launch_factor", json_real(d->cfg.launch_factor));
                json_object_set_new(gjob, "launch_floor_ms", json_integer(d->cfg.launch_floor_ms));
        }
        if (d->cfg.dump_dir)
                json_object_set_new(gjob, "dump", json_true());
        if (!json_object_get(gjob, "mode"))
                json_object_set_new(gjob, "mode", json_string("full"));
        j->gjob = gjob;
        *ret_job = j;
        return 1;
}

/* Worker @w starts running @j now (it was sent, or was next in its pipe). */
static void worker_begin_job(Dispatcher *d, Worker *w, Job *j)
{
        w->job = j;
        w->state = W_BUSY;
        w->result_seen = false;
        w->sent_at_ms = now_ms(d);
        w->deadline_ms = w->sent_at_ms + (uint64_t)(d->cfg.job_timeout_s * 1000) + WATCHDOG_GRACE_MS;
        d->status_dirty = true;
}

/*
 * Send @j to GPU worker @w: to run at once if @w is idle, else as its next
 * job (prefetch: it waits in the pipe and starts the moment the job in
 * flight is answered). Takes ownership of @j. Return 1 sent, <0 error (the
 * job is back in its queue, the worker killed).
 */
static int run_send(Dispatcher *d, Worker *w, Job *j)
{
        int r;

        /* the grace as of now: an orphan sent again after a late fault gets the raised one */
        json_object_set_new(j->gjob, "fault_grace_ms", json_integer(d->fault_grace_now));
        r = worker_send(w, FRAME_JOB, j->gjob, j->art[SLOT_CAND]->cubin, j->art[SLOT_CAND]->cubin_len,
                        j->art[SLOT_REF]->cubin, j->art[SLOT_REF]->plain_len);
        if (r < 0) {
                requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
                worker_kill(w, "could not send a job");
                return r;
        }
        if (w->job) {
                w->queued = j;
                d->status_dirty = true;
        } else {
                worker_begin_job(d, w, j);
        }
        return 1;
}

/*
 * A job sent to @w that @w will not run (it is exiting or gone): it keeps
 * its claim, lease and attempt count, and runs next on another worker
 * (run_one() takes orphans first). The job did not run, so nothing is
 * charged to it.
 */
static void worker_orphan_queued(Dispatcher *d, Worker *w)
{
        Job *j = w->queued, **p = &d->orphans;

        if (!j)
                return;
        w->queued = NULL;
        while (*p)
                p = &(*p)->next;
        j->next = NULL;
        *p = j;
        d->n_orphans++;
        d->status_dirty = true;
}

/*
 * Give GPU worker @w a job: an orphan first, else the next compiled one of
 * the store. With @w busy this is its next job (prefetch). Return: 1 a job
 * was sent or ended here, 0 nothing to do, <0 error.
 */
static int run_one(Dispatcher *d, Worker *w)
{
        Job *j = d->orphans;
        int r = 1;

        if (j) {
                d->orphans = j->next;
                d->n_orphans--;
                j->next = NULL;
        } else {
                r = run_claim(d, &j);
        }
        return r > 0 && j ? run_send(d, w, j) : r;
}

/*
 * The grace adapts to the host. How late the driver reports a fault grows
 * with what else the host's driver is doing: under the RL mix, the faults
 * that surfaced after their 100 ms launch limit used at most 76 ms of the
 * grace with one H200 busy, and 148 ms with two (restarting workers'
 * context creations queue in the driver; BENCHMARKS.md). The
 * configured fault_grace_ms is the least grace; a runtime error that
 * surfaced only within the grace says how much of it it used
 * (error.grace_used_ms), and every job after it gets GRACE_MARGIN times the
 * most that any of the last GRACE_SEEN_N such faults used, at most
 * GRACE_ADAPT_MAX_MS. So a fault stays named as one on a busy host, and a
 * hang on a quiet one costs no more than the configured grace. A grace of 0
 * (none) is left alone.
 */
static void grace_note(Dispatcher *d, json_t *error)
{
        json_t *used = json_object_get(error, "grace_used_ms");
        int before = d->fault_grace_now, least = d->cfg.fault_grace_ms;
        int most = least > GRACE_ADAPT_MAX_MS ? least : GRACE_ADAPT_MAX_MS;
        double m = 0, want;

        if (least <= 0 || !json_is_true(json_object_get(error, "after_limit")) || !json_is_number(used))
                return;
        d->grace_seen[d->grace_seen_next] = json_number_value(used);
        d->grace_seen_next = (d->grace_seen_next + 1) % GRACE_SEEN_N;
        for (int i = 0; i < GRACE_SEEN_N; i++)
                if (d->grace_seen[i] > m)
                        m = d->grace_seen[i];
        want = ceil(m * GRACE_MARGIN);
        d->fault_grace_now = want < least ? least : want > most ? most : (int)want;
        if (d->fault_grace_now != before) {
                log_info("dispatch: fault_grace_ms %d -> %d: a fault surfaced %.1f ms into the grace",
                         before, d->fault_grace_now, json_number_value(used));
                d->status_dirty = true;
        }
}

/*
 * A GPU RESULT that is not to be believed (resultcheck_gpu(), or no valid
 * verdict): the worker is killed and the job goes back to the run queue; a
 * job that got such answers on every attempt ends as internal_error, never
 * with the RESULT's verdict or speedup. Takes ownership of @j.
 */
static void gpu_invalid(Dispatcher *d, Worker *w, Job *j, const char *why)
{
        w->malformed = true;
        worker_kill(w, "sent an invalid RESULT");
        log_warn("dispatch: job %" PRId64 ": GPU worker %d's RESULT: %s", j->sj->id, w->index, why);
        if (j->sj->attempts >= d->cfg.max_attempts) {
                json_t *err = pipeline_error("internal", "the GPU worker's RESULT was invalid on every attempt "
                                             "(%d; an infrastructure fault, not the kernel's); last: %s",
                                             j->sj->attempts, why);
                json_t *res = pipeline_result(job_task_name(j), "internal_error", NULL, NULL, err, j->seed);
                json_decref(err);
                finish(d, j->sj->id, "internal_error", res);
        } else {
                requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
        }
        job_free(j);
}

static void gpu_done(Dispatcher *d, Worker *w, Job *j, json_t *result)
{
        const char *verdict = json_string_value(json_object_get(result, "verdict"));
        json_t *res;

        if (!gpu_verdict_valid(verdict)) {
                gpu_invalid(d, w, j, "without a valid verdict");
                return;
        }
        if (strcmp(verdict, "internal_error") == 0 && j->sj->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: job %" PRId64 ": GPU worker reported an internal error; retrying", j->sj->id);
                requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
                return;
        }
        if (strcmp(verdict, "runtime_error") == 0)
                grace_note(d, json_object_get(result, "error"));
        /* the worker sees its GPU as device 0 (CUDA_VISIBLE_DEVICES): say which one of the host it was */
        if (json_is_object(json_object_get(result, "gpu")))
                json_object_set_new(json_object_get(result, "gpu"), "index", json_integer(w->index));
        /* an inline task_spec's name is no proof it is the library's task: no baselines */
        res = pipeline_result_measured(job_task_name(j), verdict, json_object_get(j->sj->compile, "candidate"), result,
                                       NULL, j->seed, j->own_task ? NULL : d->cfg.baselines);
        /* A task sent inline (task_spec) names itself: its name is no proof that it is the library's
         * task of that name, so what is recorded per library task (reference times) leaves it out. */
        if (res && j->own_task)
                json_object_set_new(res, "task_inline", json_true());
        finish(d, j->sj->id, verdict, res);
        job_free(j);
}

static void on_pump_idle(uv_idle_t *h);

/* Everything the loop does when something changed. */
static void pump(Dispatcher *d)
{
        int claimed = 0;
        Worker *w;

        if (d->stopping)
                goto out;
        /* The store refuses writes: take no new job (its result could not be
         * recorded either) until what is owed is written. */
        if (d->owed)
                goto out;
        /* Run stage first, so that a GPU's next job never waits behind
         * compile-stage claims: one job per idle GPU worker; then, with
         * prefetch, the next job of each busy one, so its worker starts it
         * the moment it answers the one in flight, without waiting for this
         * loop. At most one job per worker, so this takes no turns' limit. */
        while ((w = idle_worker(d, PROC_GPU))) {
                if (run_one(d, w) <= 0)
                        break;
        }
        for (int i = 0; i < d->n_workers && !d->cfg.no_prefetch; i++) {
                w = &d->workers[i];
                if (w->spec->role == PROC_GPU && w->state == W_BUSY && w->job && !w->queued && !w->dying &&
                    run_one(d, w) <= 0)
                        break;
        }
        /* Compile stage: claim while there is room, PUMP_BATCH per loop turn
         * (each claim is a store write: a long burst would hold up the GPU
         * workers' RESULTs and the first compiles); cache hits finish at once. */
        while (d->n_compile > 0 && d->nvrtc[0] &&
               d->n_jobs < d->n_compile * COMPILE_BACKLOG_PER_WORKER && claimed < PUMP_BATCH) {
                StoreJob *sj = NULL;
                Job *j;
                int r = store_claim_next(d->store, STAGE_COMPILE, d->owner, d->cfg.lease_s, &sj);
                if (r != 0) {
                        if (r < 0)
                                log_error("dispatch: claiming a job failed: %s", strerror(-r));
                        break;
                }
                claimed++;
                j = job_new(d, sj);
                if (!j) {
                        requeue(d, sj->id, STAGE_COMPILE, sj->task);
                        store_job_free(sj);
                        break;
                }
                job_begin_compile(d, j);
        }
        send_compiles(d);
out:
        if (claimed >= PUMP_BATCH && !d->idle_active) {
                d->idle_active = true;
                uv_idle_start(&d->pump_idle, on_pump_idle);
        }
        if (d->status_dirty)
                status_rebuild(d);
}

static void on_pump_idle(uv_idle_t *h)
{
        Dispatcher *d = h->data;

        uv_idle_stop(h);
        d->idle_active = false;
        pump(d);
}

static void on_wake(uv_async_t *h)
{
        pump(h->data);
}

static bool all_quiet(Dispatcher *d)
{
        for (int i = 0; i < d->n_workers; i++)
                if (d->workers[i].state == W_BUSY || d->workers[i].state == W_EXITING)
                        return false;
        return true;
}

static void shutdown_now(Dispatcher *d);

/* Jobs whose lease this dispatcher holds: compile-stage jobs, GPU jobs in flight or queued, orphans,
 * owed writes. */
static int jobs_held(Dispatcher *d)
{
        int n = d->n_jobs + d->n_owed;

        n += d->n_orphans;
        for (int i = 0; i < d->n_workers; i++)
                n += (d->workers[i].job != NULL) + (d->workers[i].queued != NULL);
        return n;
}

static void on_tick(uv_timer_t *t)
{
        Dispatcher *d = t->data;
        uint64_t now = now_ms(d);
        int requeued = 0;

        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                if (w->state == W_STOPPED && w->handles_open == 0 && !d->stopping && now >= w->restart_at_ms)
                        worker_start(w);
                else if ((w->state == W_BUSY || w->state == W_STARTING || w->state == W_EXITING) &&
                         now > w->deadline_ms && !w->killed_by_watchdog) {
                        w->killed_by_watchdog = w->state == W_BUSY;
                        worker_kill(w, w->state == W_BUSY       ? "watchdog: the request overran its deadline"
                                       : w->state == W_EXITING ? "did not exit after saying it would"
                                                               : "did not say HELLO in time");
                }
        }
        /* Store writes the store refused: before the heartbeat, which renews their leases. */
        if (d->owed && now >= d->owed_retry_ms)
                owed_retry(d);
        /* Heartbeats: one write renews every lease this supervisor holds (the owed ones included). */
        if (now - d->last_heartbeat_ms > (uint64_t)(d->cfg.lease_s * 1000 / 3)) {
                int extended = 0, held = jobs_held(d);
                if (store_heartbeat_owner(d->store, d->owner, d->cfg.lease_s, &extended) < 0)
                        log_warn("dispatch: renewing leases failed");
                else if (extended > held) /* a lease nobody here holds would never expire: a bug */
                        log_error("dispatch: renewed %d lease(s) but holds %d job(s): a claimed job was dropped",
                                  extended, held);
                d->last_heartbeat_ms = now;
        }
        /* The reaper: leases of dead supervisors (other hosts, or a crash). */
        if (now - d->last_reap_ms > 1000) {
                int64_t *failed_ids = NULL;
                size_t n_failed = 0;
                d->last_reap_ms = now;
                if (store_reap_collect(d->store, d->cfg.max_attempts, &requeued, &failed_ids, &n_failed) == 0) {
                        if (requeued || n_failed)
                                log_warn("dispatch: reaper: %d expired lease(s) re-queued, %zu job(s) ended as "
                                         "internal_error", requeued, n_failed);
                        for (size_t i = 0; i < n_failed; i++) {
                                count_verdict(d, "internal_error");
                                notify_done(d, failed_ids[i]);
                        }
                }
                free(failed_ids);
        }
        /* Bounded tables: the compile cache by size, idempotency keys by age. */
        if (now - d->last_prune_ms > 60000) {
                d->last_prune_ms = now;
                if (store_cache_prune(d->store, LIMIT_COMPILE_CACHE_BYTES_DEFAULT, NULL) < 0 ||
                    store_prune_idempotency(d->store, 86400, NULL) < 0)
                        log_warn("dispatch: pruning the compile cache or idempotency keys failed");
        }
        if (d->stopping && (all_quiet(d) || now >= d->stop_deadline_ms)) {
                shutdown_now(d);
                return;
        }
        if (d->n_clocks > 0) /* the GPU clocks in the status stay within a tick of now */
                d->status_dirty = true;
        pump(d);
}

/* ---- start and stop ------------------------------------------------------------ */

static void close_cb_noop(uv_handle_t *h)
{
        (void)h;
}

static void shutdown_now(Dispatcher *d)
{
        /* Requeue what this supervisor still holds; drop the compile requests
         * (they point at those jobs); kill the workers. */
        while (d->compiles) {
                CompileReq *req = d->compiles;
                d->compiles = req->next;
                compile_req_free(req);
        }
        while (d->jobs) {
                Job *j = d->jobs;
                d->jobs = j->next;
                d->n_jobs--;
                store_requeue(d->store, j->sj->id, d->owner, STAGE_COMPILE);
                job_free(j);
        }
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                w->req = NULL;
                if (w->job) {
                        store_requeue(d->store, w->job->sj->id, d->owner, STAGE_RUN);
                        job_free(w->job);
                        w->job = NULL;
                }
                worker_orphan_queued(d, w);
                if (w->state != W_STOPPED)
                        worker_kill(w, "shutting down");
        }
        while (d->orphans) {
                Job *j = d->orphans;
                d->orphans = j->next;
                d->n_orphans--;
                store_requeue(d->store, j->sj->id, d->owner, STAGE_RUN);
                job_free(j);
        }
        if (d->owed)
                owed_retry(d);
        if (d->owed)
                log_error("dispatch: %d store write(s) still owed at shutdown: their jobs are re-queued at the next "
                          "start (store_requeue_all_leases()) and run again", d->n_owed);
        while (d->owed) {
                Owed *o = d->owed;
                d->owed = o->next;
                d->n_owed--;
                owed_free(o);
        }
        uv_timer_stop(&d->tick);
        uv_close((uv_handle_t *)&d->tick, close_cb_noop);
        uv_close((uv_handle_t *)&d->wake, close_cb_noop);
        uv_close((uv_handle_t *)&d->stop_async, close_cb_noop);
        uv_close((uv_handle_t *)&d->pump_idle, close_cb_noop);
        uv_prepare_stop(&d->settle);
        uv_close((uv_handle_t *)&d->settle, close_cb_noop);
        status_rebuild(d);
        /* The loop ends once the workers' exit callbacks have closed their handles. */
}

static void on_stop(uv_async_t *h)
{
        Dispatcher *d = h->data;

        if (d->stopping)
                return;
        d->stopping = true;
        d->stop_deadline_ms = now_ms(d) + (uint64_t)(d->stop_grace_s * 1000);
        d->status_dirty = true;
        log_info("dispatch: stopping: no new jobs; waiting for running ones");
        /* Compile-stage jobs are cheap to redo: hand them back now. */
        while (d->jobs) {
                Job *j = d->jobs;
                if (j->pending > 0)
                        break; /* waiting on a worker; settled in shutdown_now */
                d->jobs = j->next;
                d->n_jobs--;
                requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task);
                job_free(j);
        }
        /* ...and so are run-stage jobs that no worker holds. */
        while (d->orphans) {
                Job *j = d->orphans;
                d->orphans = j->next;
                d->n_orphans--;
                requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
        }
        status_rebuild(d);
}

static void loop_main(void *arg)
{
        Dispatcher *d = arg;

        pthread_setname_np(pthread_self(), "dispatch"); /* top -H, /proc/PID/task/TID/comm */
        uv_run(&d->loop, UV_RUN_DEFAULT);
}

static int parse_gpus(const char *spec, int *ret, int max)
{
        int n = 0;

        if (!spec || strcmp(spec, "auto") == 0) {
                int count = proctab_count_gpus();
                for (int i = 0; i < count && n < max; i++)
                        ret[n++] = i;
                return n;
        }
        if (strcmp(spec, "none") == 0 || !*spec)
                return 0;
        for (const char *p = spec; *p && n < max;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p || v < 0 || v > 1024)
                        return -EINVAL;
                ret[n++] = (int)v;
                p = *end == ',' ? end + 1 : end;
                if (*end && *end != ',')
                        return -EINVAL;
        }
        return n;
}

/**
 * dispatch_start() - start the dispatcher's loop, its workers and its thread
 * @cfg: settings; copied (the strings too), tasks and waiters borrowed
 * Return: 0, -EINVAL for a bad GPU list, or a negative errno.
 */
int dispatch_start(const DispatchConfig *cfg, Dispatcher **ret_dispatcher)
{
        Dispatcher *d = calloc(1, sizeof(*d));
        int gpus[MAX_WORKERS], n_gpus, n_compile, r;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);

        if (!d)
                return -ENOMEM;
        d->cfg = *cfg;
        if (d->cfg.max_attempts <= 0)
                d->cfg.max_attempts = 3;
        if (d->cfg.lease_s <= 0)
                d->cfg.lease_s = 60;
        if (d->cfg.job_timeout_s <= 0)
                d->cfg.job_timeout_s = 120;
        if (d->cfg.compile_timeout_ms <= 0)
                d->cfg.compile_timeout_ms = LIMIT_COMPILE_WALL_MS;
        if (d->cfg.launch_timeout_ms <= 0)
                d->cfg.launch_timeout_ms = 10000;
        if (d->cfg.launch_factor == 0)
                d->cfg.launch_factor = 1000;
        if (d->cfg.fault_grace_ms == 0)
                d->cfg.fault_grace_ms = LIMIT_FAULT_GRACE_MS_DEFAULT;
        if (d->cfg.fault_grace_ms < 0)
                d->cfg.fault_grace_ms = 0;
        d->fault_grace_now = d->cfg.fault_grace_ms;
        if (d->cfg.launch_floor_ms <= 0)
                d->cfg.launch_floor_ms = LIMIT_LAUNCH_FLOOR_MS_DEFAULT;
        if (d->cfg.gpu_workers_per_gpu <= 0)
                d->cfg.gpu_workers_per_gpu = 3;
        if (d->cfg.gpu_workers_per_gpu > 8)
                d->cfg.gpu_workers_per_gpu = 8;
        /* absolute: the workers start in "/" (a relative folder would name nothing there) */
        d->libexec_dir = realpath(cfg->libexec_dir ? cfg->libexec_dir : ".", NULL);
        if (!d->libexec_dir)
                d->libexec_dir = strdup(cfg->libexec_dir ? cfg->libexec_dir : ".");
        d->arch = strdup(cfg->arch ? cfg->arch : "sm_90a");
        d->verdicts = json_object();
        d->cfg.libexec_dir = d->libexec_dir;
        d->cfg.arch = d->arch;
        d->cfg.gpus = NULL;
        pthread_mutex_init(&d->status_lock, NULL);
        /* "host/kevald-PID": the host id first, so that a restarted host takes back only its own leases. */
        snprintf(d->owner, sizeof(d->owner), "%s/kevald-%d", store_host_id(), (int)getpid());

        n_gpus = parse_gpus(cfg->gpus, gpus, MAX_WORKERS / 2 / d->cfg.gpu_workers_per_gpu);
        if (n_gpus < 0) {
                r = -EINVAL;
                goto fail;
        }
        n_compile = cfg->compile_workers > 0 ? cfg->compile_workers : (int)(cores > 0 ? cores : 1);
        if (n_compile > MAX_WORKERS - n_gpus * d->cfg.gpu_workers_per_gpu)
                n_compile = MAX_WORKERS - n_gpus * d->cfg.gpu_workers_per_gpu;
        r = store_open(cfg->db_path, &d->store);
        if (r != 0) {
                r = r < 0 ? r : -EIO;
                goto fail;
        }
        r = store_secret(d->store, d->secret);
        if (r != 0)
                goto fail;
        r = store_requeue_all_leases(d->store);
        if (r < 0)
                goto fail;

        uv_loop_init(&d->loop);
        uv_async_init(&d->loop, &d->wake, on_wake);
        uv_async_init(&d->loop, &d->stop_async, on_stop);
        uv_timer_init(&d->loop, &d->tick);
        uv_idle_init(&d->loop, &d->pump_idle);
        uv_prepare_init(&d->loop, &d->settle);
        d->wake.data = d->stop_async.data = d->tick.data = d->pump_idle.data = d->settle.data = d;
        for (int i = 0; i < n_compile; i++) {
                Worker *w = &d->workers[d->n_workers++];
                w->d = d;
                w->spec = proctab_get(PROC_COMPILE);
                w->index = i;
        }
        d->n_compile = n_compile;
        for (int i = 0; i < n_gpus; i++) {
                d->clocks[d->n_clocks++] = (GpuClock){ .index = gpus[i], .state = GPU_T_NO_WORKER,
                                                       .since_ns = uv_hrtime() };
                for (int k = 0; k < d->cfg.gpu_workers_per_gpu; k++) {
                        Worker *w = &d->workers[d->n_workers++];
                        w->d = d;
                        w->spec = proctab_get(PROC_GPU);
                        w->index = gpus[i];
                }
        }
        log_info("dispatch: %d compile worker(s), %d GPU(s) with %d worker(s) each%s", n_compile, n_gpus,
                 d->cfg.gpu_workers_per_gpu,
                 n_gpus == 0 ? " (no GPU: compile-only submissions complete, full evaluations wait)" : "");
        for (int i = 0; i < d->n_workers; i++)
                worker_start(&d->workers[i]);
        status_rebuild(d);
        uv_prepare_start(&d->settle, on_prepare);
        uv_timer_start(&d->tick, on_tick, 100, 100);
        r = uv_thread_create(&d->thread, loop_main, d);
        if (r < 0) {
                r = -EAGAIN;
                goto fail;
        }
        *ret_dispatcher = d;
        return 0;
fail:
        store_close(d->store);
        free(d->libexec_dir);
        free(d->arch);
        json_decref(d->verdicts);
        free(d);
        return r;
}

void dispatch_notify(Dispatcher *d)
{
        if (d)
                uv_async_send(&d->wake);
}

/**
 * dispatch_stop() - graceful stop: no new jobs, running ones get @grace_s to
 * finish, the rest go back to the queue, workers are killed, the thread joins.
 * Return: 0.
 */
int dispatch_stop(Dispatcher *d, double grace_s)
{
        if (!d)
                return 0;
        d->stop_grace_s = grace_s; /* read by on_stop, on the loop thread, after the wake-up */
        uv_async_send(&d->stop_async);
        uv_thread_join(&d->thread);
        return 0;
}

void dispatch_free(Dispatcher *d)
{
        if (!d)
                return;
        uv_loop_close(&d->loop);
        while (d->compiles) {
                CompileReq *r = d->compiles;
                d->compiles = r->next;
                compile_req_free(r);
        }
        for (int i = 0; i < REF_CACHE_SLOTS; i++)
                artifact_free(d->refs[i]);
        for (int i = 0; i < d->n_workers; i++) {
                json_decref(d->workers[i].hello);
                frame_decoder_clear(&d->workers[i].dec);
        }
        store_close(d->store);
        json_decref(d->status);
        json_decref(d->verdicts);
        pthread_mutex_destroy(&d->status_lock);
        free(d->libexec_dir);
        free(d->arch);
        free(d);
}
