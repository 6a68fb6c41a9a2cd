/*
 * store - the front of the store: store.h is the contract, and this file
 * picks the backend for a path (a postgresql:// URI, or "postgresql:" for
 * the PG* environment: server/store/store_pg.c; anything else: a SQLite file,
 * server/store/store_sqlite.c) and opens it: connect, migrate, make the secret.
 * It also holds what is per process or per connection rather than per
 * operation: the StorePool, the claim gate, group commit, wake-ups, the
 * copy, and whether the storage can write (store_write_fault(), fed by the
 * write calls' results). The operations are server/store/store_queue.c's and
 * server/store/store_read.c's, over the backend's primitives (store_backend.h).
 *
 * A Store is one backend connection (be) and that backend's table (ops),
 * both fixed at store_open().
 */
#include "server/store/store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"
#include "server/store/store_test.h"

struct StorePool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        Store **free;
        int n_free;
        int n;
};

/*
 * The claim gate (PostgreSQL). While this process LISTENs (watching), every
 * commit of any host that makes a job claimable reaches it as a
 * kevald_work notification, which bumps work_gen. A claim that found the
 * stage empty at generation g can answer STORE_E_EMPTY again without a
 * query until the generation moves: an idle host sends no claim queries,
 * however often its dispatcher asks. The generation is read before the
 * query, so a notification racing with an empty answer opens the gate.
 * When the listener loses its connection, watching is cleared (every claim
 * queries) until it is back and has bumped the generation. A closed gate
 * still opens after CLAIM_GATE_MAX_S: rows can become claimable without a
 * notification when another host's claim transaction is rolled back (it
 * died between its pick and its commit), and these must not wait for the
 * next submission.
 */
#define CLAIM_GATE_MAX_S 5.0
static atomic_ulong work_gen;
static atomic_int watching;

/*
 * Whether the store can write (store_write_fault()). A write that failed for
 * the storage's sake (a full disk, a read-only file or server, an I/O error)
 * sets the fault; a write that adds data (an insert, a finish, a compile
 * cache entry) and succeeds clears it. Lease renewals and claims may set it
 * but not clear it: they rewrite rows in place and can succeed on a full
 * disk where nothing new fits. Process-wide: every connection shares the
 * same storage.
 */
static atomic_int write_fault;          /* -errno of the last such failure; 0: none since a success */
static atomic_llong write_fault_ms;     /* CLOCK_MONOTONIC ms of that failure */

static long long mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool is_storage_fault(int r)
{
        return r == -ENOSPC || r == -EROFS || r == -EIO || r == -EDQUOT;
}

/**
 * store_note_write() - record the outcome of a write for store_write_fault()
 * @r:    the write's return
 * @adds: the write adds data (a success clears the fault)
 * Return: @r.
 */
int store_note_write(int r, bool adds)
{
        if (is_storage_fault(r)) {
                atomic_store(&write_fault_ms, mono_ms());
                atomic_store(&write_fault, r);
        } else if (r == 0 && adds && atomic_load(&write_fault) != 0) {
                atomic_store(&write_fault, 0);
        }
        return r;
}

/**
 * store_write_fault() - whether a recent write failed for the storage's sake
 * @within_s: how recent a failure counts (the fault also ends when a write
 *            that adds data succeeds)
 * Return: 0 when writes work as far as is known, or the negative errno of the
 * last failure (-ENOSPC, -EROFS, -EIO, -EDQUOT) within @within_s.
 */
int store_write_fault(double within_s)
{
        int r = atomic_load(&write_fault);

        if (r == 0 || (double)(mono_ms() - atomic_load(&write_fault_ms)) > within_s * 1000.0)
                return 0;
        return r;
}

/**
 * store_error_is_storage() - whether @r says the storage cannot write now
 * (a full disk, a read-only file or server, an I/O error): a condition to
 * retry after, not a bug
 * @r: a return of a store call
 */
bool store_error_is_storage(int r)
{
        return is_storage_fault(r);
}

/* ---- backend choice ----------------------------------------------------- */

/**
 * store_open() - open (creating if needed) the database and bring its schema up to date
 * @path:      a SQLite file, or a PostgreSQL URI (store_path_is_pg()); at most
 *             LIMIT_DSN_BYTES
 * @ret_store: on success, a new Store (store_close())
 * Return: 0, STORE_E_NEWER_DB when the database's schema is newer than this
 * binary (logged), -ENOTCONN when PostgreSQL cannot be reached (logged, the
 * password elided), or a negative errno.
 */
int store_open(const char *path, Store **ret_store)
{
        Store *s;
        int r;

        if (!path || !*path || strlen(path) > LIMIT_DSN_BYTES)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ops = store_path_is_pg(path) ? &store_pg_ops : &store_sqlite_ops;
        r = s->ops->open(path, &s->be);
        if (r != 0) {
                free(s);
                return r;
        }
        r = s->ops->migrate(s->be, path);
        if (r == 0)
                r = store_secret_ensure(s);
        if (r != 0) {
                store_close(s);
                return r;
        }
        *ret_store = s;
        return 0;
}

/**
 * store_open_readonly() - open an existing SQLite store for reading only
 * @path:      a SQLite file (not a PostgreSQL URI); never created, migrated or written
 * @ret_store: on success, a new Store (store_close()) that only reads may use
 * Return: 0; -EINVAL for a PostgreSQL URI; -ENOENT when the file does not
 * exist; -EBADMSG when it is not a kevald store; STORE_E_NEWER_DB; or a
 * negative errno.
 */
int store_open_readonly(const char *path, Store **ret_store)
{
        Store *s;
        int r;

        if (!path || !*path || strlen(path) > LIMIT_DSN_BYTES || store_path_is_pg(path))
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ops = &store_sqlite_ops;
        r = s->ops->open_readonly(path, &s->be);
        if (r != 0) {
                free(s);
                return r;
        }
        *ret_store = s;
        return 0;
}

/**
 * store_close() - close the connection
 * @store: the store, or NULL
 */
void store_close(Store *store)
{
        if (!store)
                return;
        if (store->listening && !store->listen_lost)
                atomic_fetch_sub(&watching, 1);
        store->ops->close(store->be);
        free(store);
}

/* ---- wake-ups ------------------------------------------------------------ */

/**
 * store_listen() - subscribe this connection to the fleet's wake-ups
 * @store: open store, used for nothing else afterwards; borrowed
 * Return: 0, -EOPNOTSUPP on SQLite (one host: wake-ups stay in the process),
 * or a negative errno.
 */
int store_listen(Store *store)
{
        int r = store->ops->listen ? store->ops->listen(store->be) : -EOPNOTSUPP;

        if (r == 0 && !store->listening) {
                store->listening = true;
                atomic_fetch_add(&work_gen, 1);
                atomic_fetch_add(&watching, 1);
        }
        return r;
}

/**
 * store_next_event() - wait for one wake-up from any host's commit
 * @store:      a store after store_listen(); borrowed
 * @timeout_ms: how long to wait (≥ 0)
 * @ret_ev:     on success, the event
 * Return: 0, STORE_E_EMPTY when none came in time, -EOPNOTSUPP on SQLite,
 * -ENOTCONN when the connection was lost (it is re-established, and
 * LISTEN renewed, on a later call), or a negative errno.
 */
int store_next_event(Store *store, int timeout_ms, StoreEvent *ret_ev)
{
        if (timeout_ms < 0 || !ret_ev)
                return -EINVAL;
        if (!store->ops->next_event)
                return -EOPNOTSUPP;
        int r = store->ops->next_event(store->be, timeout_ms, ret_ev);
        if (r == -ENOTCONN && !store->listen_lost) {
                /* Notifications may be missed from now on: claims must ask the database. */
                store->listen_lost = true;
                atomic_fetch_sub(&watching, 1);
        }
        if (r == 0 && ret_ev->kind == STORE_EVENT_WORK) {
                atomic_fetch_add(&work_gen, 1);
                if (store->listen_lost) {       /* back, LISTEN renewed: this event is the catch-up */
                        store->listen_lost = false;
                        atomic_fetch_add(&watching, 1);
                }
        }
        return r;
}

/* ---- copy ---------------------------------------------------------------- */

/*
 * What store_copy() copies, parents first. Every table of the schema but
 * metric_buckets (data of migration 006, the same on both) and the
 * PostgreSQL-only hosts and kevald_schema.
 */
static const char *const copy_tables[] = {
        "meta", "counters", "tokens", "submissions", "submission_requests", "submission_compiles",
        "submission_results", "queue_counts", "idempotency", "compile_cache", "task_stats", "task_speedups",
        "verdict_counts", "token_service", "job_metrics", "activity_minutely", "gpu_minutely", "run_summary",
        "run_step_tasks", "run_step_speedups", "task_verdicts", "metric_hist", "metric_sums",
        "run_step_verdicts", "task_reference_times",
};

typedef struct CopyCtx {
        Store *to;
        const char *table;
        int64_t rows;
} CopyCtx;

static int copy_one_row(void *arg, int n, const char *const *names, const StoreVal *vals)
{
        CopyCtx *c = arg;
        int r = c->to->ops->copy_row(c->to->be, c->table, n, names, vals);
        if (r == 0)
                c->rows++;
        return r;
}

/**
 * store_copy() - see store.h
 */
int store_copy(Store *from, Store *to, bool force, json_t **ret_report)
{
        const size_t n = sizeof(copy_tables) / sizeof(copy_tables[0]);
        json_t *report;
        int r;

        if (!from || !to || !from->ops->each_row || !to->ops->copy_begin || !ret_report)
                return -EINVAL;
        report = json_object();
        if (!report)
                return -ENOMEM;
        r = to->ops->copy_begin(to->be, copy_tables, n, force);
        if (r != 0) {
                json_decref(report);
                return r;
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                CopyCtx c = { .to = to, .table = copy_tables[i] };
                r = from->ops->each_row(from->be, copy_tables[i], copy_one_row, &c);
                if (r == STORE_E_NOT_FOUND)
                        r = 0;  /* not in this (older) schema: nothing to copy */
                if (r == 0 && json_object_set_new(report, copy_tables[i], json_integer(c.rows)))
                        r = -ENOMEM;
        }
        r = to->ops->copy_end(to->be, copy_tables, n, r);
        if (r != 0) {
                json_decref(report);
                return r;
        }
        *ret_report = report;
        return 0;
}

/**
 * store_insert_submissions() - store_insert_request() with the fields spread out
 * @store, @subs, @n, @idem_key, @body_hash, @max_queued_total, @max_queued_token: see StoreInsert
 * @ret_ids: on success, the @n ids (new or, on an idempotent replay, the original ones)
 * Return: as store_insert_request().
 */
int store_insert_submissions(Store *store, const StoreNew *subs, size_t n, int64_t *ret_ids,
                             const char *idem_key, const uint8_t body_hash[32], int64_t max_queued_total,
                             int64_t max_queued_token)
{
        StoreInsert ins = {
                .subs = subs, .n = n, .idem_key = idem_key, .body_hash = body_hash,
                .max_queued_total = max_queued_total, .max_queued_token = max_queued_token,
        };
        return store_insert_request(store, &ins, ret_ids, NULL);
}

/* ---- group commit, claims ----------------------------------------------- */

/**
 * store_begin_group() - open a durable write transaction for several inserts
 * @store: open store, not already in a group; borrowed
 *
 * Until store_commit_group() or store_rollback_group(), only
 * store_insert_request() and store_insert_submissions() may be called on
 * this store (other writes return -EINVAL).
 *
 * Return: 0, -EINVAL when a group is already open, or a negative errno.
 */
int store_begin_group(Store *store)
{
        int r = store_tx_begin(store, STORE_TX_DURABLE);

        if (r == 0) {
                store->in_group = true;
                store->group_lost = false;
        }
        return r;
}

/**
 * store_commit_group() - commit the group (one durable commit) and close it
 * @store: store with an open group; borrowed
 * Return: 0 when every insert of the group that returned 0 is durable;
 * -EINVAL without an open group; -EIO (or -ENOTCONN) when the transaction was
 * lost; another negative errno when the commit failed (nothing of the group
 * is stored then).
 */
int store_commit_group(Store *store)
{
        int r;

        if (!store->in_group)
                return -EINVAL;
        store->in_group = false;
        r = store->ops->tx_end(store->be, store->group_lost ? -EIO : 0);
        store->group_lost = false;
        return store_note_write(r, true);
}

/**
 * store_rollback_group() - drop everything the open group inserted (tests: store_test.h)
 * @store: store with an open group (no-op otherwise); borrowed
 */
void store_rollback_group(Store *store)
{
        if (!store->in_group)
                return;
        store->in_group = false;
        store->group_lost = false;
        store->ops->tx_end(store->be, -ECANCELED);
}

/**
 * store_tx_begin() - open a write transaction on @s's connection
 * @s:    open store; borrowed
 * @kind: how its commit waits for the disk (StoreTxKind)
 * Return: 0, -EINVAL inside a group (only inserts may join its
 * transaction), or a negative errno.
 */
int store_tx_begin(Store *s, StoreTxKind kind)
{
        return s->in_group ? -EINVAL : s->ops->tx_begin(s->be, kind);
}

/**
 * store_claim_next() - take the next job for a stage (store_claim_job()), behind the claim gate
 * @store:   open store; borrowed
 * @stage:   STAGE_COMPILE (takes a queued job to compiling) or STAGE_RUN
 *           (takes a compiled job to running)
 * @owner:   lease owner recorded on the job ("host/worker"); borrowed
 * @lease_s: lease length in seconds (> 0)
 * @ret_job: on success, a new StoreJob (store_job_free()); attempts counts
 *           this claim; compile is set for STAGE_RUN when it was stored
 *
 * See "The claim gate" above; SQLite (one host, a cheap local probe) has none.
 *
 * Return: 0, STORE_E_EMPTY when nothing waits for the stage, -EINVAL, or a
 * negative errno (-EBADMSG when the stored request does not parse).
 */
int store_claim_next(Store *store, Stage stage, const char *owner, double lease_s, StoreJob **ret_job)
{
        struct timespec ts;
        unsigned long gen;
        double now;
        int r;

        if (!owner || !(lease_s > 0) || (stage != STAGE_COMPILE && stage != STAGE_RUN))
                return -EINVAL;
        if (!store->ops->claim_gate)
                return store_note_write(store_claim_job(store, stage, owner, lease_s, ret_job), false);
        gen = atomic_load(&work_gen);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        if (atomic_load(&watching) > 0 && store->empty_valid[stage] && store->empty_gen[stage] == gen &&
            now - store->empty_at[stage] < CLAIM_GATE_MAX_S)
                return STORE_E_EMPTY;
        r = store_claim_job(store, stage, owner, lease_s, ret_job);
        store->empty_valid[stage] = r == STORE_E_EMPTY;
        store->empty_gen[stage] = gen;
        store->empty_at[stage] = now;
        return r;
}

/* ---- pool --------------------------------------------------------------- */

/**
 * storepool_open() - open @n connections for threads to share
 * @path:     database file
 * @n:        1..256 connections
 * @ret_pool: on success, a new StorePool (storepool_close())
 * Return: 0, STORE_E_NEWER_DB, -EINVAL, or a negative errno.
 */
int storepool_open(const char *path, int n, StorePool **ret_pool)
{
        StorePool *p;
        int r = 0;

        if (n < 1 || n > 256)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->free = calloc((size_t)n, sizeof(*p->free));
        if (!p->free) {
                free(p);
                return -ENOMEM;
        }
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->n = n;
        for (int i = 0; i < n; i++) {
                r = store_open(path, &p->free[i]);
                if (r != 0)
                        goto out;
                p->n_free++;
        }
        *ret_pool = p;
        p = NULL;
out:
        if (p) {
                p->n = p->n_free; /* only the opened ones are there to close */
                storepool_close(p);
        }
        return r;
}

/**
 * storepool_get() - check a connection out, waiting until one is free
 * @pool: the pool; borrowed
 * Return: a Store to use from this thread only, until storepool_put().
 */
Store *storepool_get(StorePool *pool)
{
        Store *s;

        pthread_mutex_lock(&pool->lock);
        while (pool->n_free == 0)
                pthread_cond_wait(&pool->cond, &pool->lock);
        s = pool->free[--pool->n_free];
        pthread_mutex_unlock(&pool->lock);
        return s;
}

/**
 * storepool_put() - give back a connection from storepool_get()
 * @pool:  the pool; borrowed
 * @store: the connection (not in a transaction)
 */
void storepool_put(StorePool *pool, Store *store)
{
        if (!store)
                return;
        pthread_mutex_lock(&pool->lock);
        pool->free[pool->n_free++] = store;
        pthread_cond_signal(&pool->cond);
        pthread_mutex_unlock(&pool->lock);
}

/**
 * storepool_close() - close every connection; all must have been put back
 * @pool: the pool, or NULL
 */
void storepool_close(StorePool *pool)
{
        if (!pool)
                return;
        for (int i = 0; i < pool->n_free; i++)
                store_close(pool->free[i]);
        if (pool->n_free != pool->n)
                log_warn("store: pool closed with %d connection(s) still checked out", pool->n - pool->n_free);
        pthread_mutex_destroy(&pool->lock);
        pthread_cond_destroy(&pool->cond);
        free(pool->free);
        free(pool);
}
