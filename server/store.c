/*
 * store - the front of the store: store.h is the contract, and this file
 * picks the backend for a path (a postgresql:// URI, or "postgresql:" for
 * the PG* environment: server/store_pg.c; anything else: a SQLite file,
 * server/store_sqlite.c) and forwards every call through that backend's
 * StoreOps table (store_backend.h). It also holds what is per process
 * rather than per backend: the StorePool, the claim gate, and whether the
 * storage can write (store_write_fault(), fed by the write calls' results).
 * What both backends follow alike is in server/store_rules.c.
 *
 * A Store is one backend connection (be) and that backend's table (ops),
 * both fixed at store_open().
 */
#include "server/store.h"

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
#include "server/store_backend.h"

struct Store {
        const StoreOps *ops;            /* the backend, fixed at store_open() */
        void *be;                       /* its connection */
        bool empty_valid[2];            /* per Stage: the last claim found nothing ... */
        unsigned long empty_gen[2];     /* ... at this work generation */
        double empty_at[2];             /* ... at this monotonic time */
        bool listening;                 /* store_listen() succeeded: counted in watching */
        bool listen_lost;               /* ... but the connection is lost: not counted now */
};

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

/* Record the outcome @r of a write; @adds: the write adds data (a success clears the fault). */
static int note_write(int r, bool adds)
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

/**
 * store_backend_name() - which backend @store uses
 * Return: "postgresql" or "sqlite" (static strings).
 */
const char *store_backend_name(Store *store)
{
        return store->ops->name;
}

/* ---- host identity, wake-ups -------------------------------------------- */

/**
 * store_host_beat() - record that this host is alive (PostgreSQL: hosts.last_seen)
 * @store: open store; borrowed
 * Return: 0 (always on SQLite, a single host), or a negative errno.
 */
int store_host_beat(Store *store)
{
        return store->ops->host_beat ? store->ops->host_beat(store->be, store_host_id()) : 0;
}

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

/* ---- forwarding: each call goes to the store's backend ------------------ */

int store_insert_request(Store *store, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed)
{
        int r = store_check_insert(ins);

        if (r < 0)
                return r;
        return note_write(store->ops->insert_request(store->be, ins, ret_ids, ret_replayed), true);
}

int store_idempotent_lookup(Store *store, int64_t token_id, const char *idem_key,
                            const uint8_t body_hash[32], json_t **ret_ids)
{
        int64_t *ids = NULL;
        size_t n = 0;
        json_t *arr;
        int r;

        if (!idem_key || !body_hash)
                return -EINVAL;
        r = store->ops->idem_get(store->be, token_id, idem_key, body_hash, LIMIT_BATCH_MAX, &ids, &n);
        if (r != 0)
                return r;
        arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
                if (json_array_append_new(arr, json_integer(ids[i]))) {
                        json_decref(arr);
                        arr = NULL;
                }
        free(ids);
        if (!arr)
                return -ENOMEM;
        *ret_ids = arr;
        return 0;
}

int store_prune_idempotency(Store *store, double older_than_s, int64_t *ret_deleted)
{
        return store->ops->prune_idempotency(store->be, older_than_s, ret_deleted);
}

int store_begin_group(Store *store)
{
        return store->ops->begin_group(store->be);
}

int store_commit_group(Store *store)
{
        return note_write(store->ops->commit_group(store->be), true);
}

void store_rollback_group(Store *store)
{
        store->ops->rollback_group(store->be);
}

/* See "The claim gate" above; SQLite (one host, a cheap local probe) has none. */
int store_claim_next(Store *store, Stage stage, const char *owner, double lease_s, StoreJob **ret_job)
{
        struct timespec ts;
        unsigned long gen;
        double now;
        int r;

        if (!owner || !(lease_s > 0) || (stage != STAGE_COMPILE && stage != STAGE_RUN))
                return -EINVAL;
        if (!store->ops->claim_gate)
                return note_write(store->ops->claim_next(store->be, stage, owner, lease_s, ret_job), false);
        gen = atomic_load(&work_gen);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        if (atomic_load(&watching) > 0 && store->empty_valid[stage] && store->empty_gen[stage] == gen &&
            now - store->empty_at[stage] < CLAIM_GATE_MAX_S)
                return STORE_E_EMPTY;
        r = store->ops->claim_next(store->be, stage, owner, lease_s, ret_job);
        store->empty_valid[stage] = r == STORE_E_EMPTY;
        store->empty_gen[stage] = gen;
        store->empty_at[stage] = now;
        return r;
}

int store_heartbeat(Store *store, int64_t id, const char *owner, double lease_s)
{
        return store->ops->heartbeat(store->be, id, owner, lease_s);
}

int store_heartbeat_owner(Store *store, const char *owner, double lease_s, int *ret_extended)
{
        return note_write(store->ops->heartbeat_owner(store->be, owner, lease_s, ret_extended), false);
}

int store_set_cache_key(Store *store, int64_t id, const uint8_t key[32])
{
        return store->ops->set_cache_key(store->be, id, key);
}

int store_set_compiled(Store *store, int64_t id, const char *owner, json_t *compile_section)
{
        char *text;
        int r;

        if (!compile_section)
                return -EINVAL;
        text = json_dumps(compile_section, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text)
                return -ENOMEM;
        r = store->ops->set_compiled(store->be, id, owner, text);
        free(text);
        return note_write(r, true);
}

int store_finish(Store *store, int64_t id, const char *owner, const char *verdict, double speedup,
                 json_t *result)
{
        char *text;
        int r = store_check_finish(verdict, result, &text);

        if (r != 0)
                return r;
        r = store->ops->tx_begin(store->be, false);
        if (r == 0) {
                r = store->ops->tx->finish(store->be, id, owner, verdict, speedup, text);
                r = store->ops->tx_end(store->be, r);
        }
        free(text);
        return note_write(r, true);
}

int store_requeue(Store *store, int64_t id, const char *owner, Stage stage)
{
        return note_write(store->ops->requeue(store->be, id, owner, stage), false);
}

/*
 * The reaper, over the backend's primitives in one transaction: the leases
 * expired before @before (NaN: every lease of this host), each put back one
 * stage or ended by store_reap_one()'s policy.
 */
static int reap_leases(Store *store, double before, int max_attempts, int *ret_requeued, int64_t **ret_failed,
                       size_t *ret_n_failed)
{
        const StoreTx *tx = store->ops->tx;
        StoreLease *l = NULL;
        int64_t *failed = NULL;
        size_t n = 0, n_failed = 0;
        int requeued = 0;
        int r = store->ops->tx_begin(store->be, false);

        if (r < 0)
                return r;
        r = tx->leases(store->be, before, &l, &n);
        if (r < 0)
                goto out;
        failed = calloc(n ? n : 1, sizeof(*failed));
        if (!failed) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n && r == 0; i++)
                r = store_reap_one(tx, store->be, l[i].id, l[i].state, l[i].attempts, l[i].task, max_attempts,
                                   &requeued, failed, &n_failed);
out:
        r = store->ops->tx_end(store->be, r);
        store_leases_free(l, n);
        if (r == 0) {
                if (ret_requeued)
                        *ret_requeued = requeued;
                if (ret_failed) {
                        *ret_failed = failed;
                        failed = NULL;
                }
                if (ret_n_failed)
                        *ret_n_failed = n_failed;
        }
        free(failed);
        return r;
}

/* store_reap_collect() with counts only. */
int store_reap(Store *store, int max_attempts, int *ret_requeued, int *ret_failed)
{
        size_t n = 0;
        int r = reap_leases(store, store_now(), max_attempts, ret_requeued, NULL, &n);

        if (r == 0 && ret_failed)
                *ret_failed = (int)n;
        return r;
}

/**
 * store_reap_collect() - deal with expired leases, reporting which jobs ended
 * @store:          open store; borrowed
 * @max_attempts:   a job whose stage was claimed this many times ends as
 *                  internal_error instead of going back (0: never)
 * @ret_requeued:   on success, jobs put back one stage (may be NULL)
 * @ret_failed_ids: on success, a new array (free()) of the jobs ended as
 *                  internal_error, for waking their waiters (may be NULL)
 * @ret_n_failed:   on success, its length (may be NULL)
 * Return: 0 or a negative errno. On PostgreSQL, the leases of every host.
 */
int store_reap_collect(Store *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids,
                       size_t *ret_n_failed)
{
        return reap_leases(store, store_now(), max_attempts, ret_requeued, ret_failed_ids, ret_n_failed);
}

/**
 * store_requeue_all_leases() - at start-up, put this host's claimed jobs back one stage
 * @store: open store; borrowed
 *
 * The previous supervisor is gone, so its leases are stale whatever their
 * expiry; attempts stay counted. SQLite: every lease (one host). PostgreSQL:
 * only the leases whose owner starts with "<store_host_id()>/"; the other
 * hosts of the fleet are alive and hold theirs (a dead host's leases expire
 * and any host's reaper returns them).
 *
 * Return: the number of jobs put back (≥ 0), or a negative errno.
 */
int store_requeue_all_leases(Store *store)
{
        int requeued = 0;
        int r = reap_leases(store, NAN, 0, &requeued, NULL, NULL);

        return r < 0 ? r : requeued;
}

int store_cancel(Store *store, int64_t id, int64_t token_id)
{
        return store->ops->cancel(store->be, id, token_id);
}

int store_get_submission(Store *store, int64_t id, json_t **ret_obj)
{
        return store->ops->get_submission(store->be, id, ret_obj);
}

int store_list_submissions(Store *store, json_t *filters, int64_t cursor, int limit, json_t **ret_items,
                           int64_t *ret_next_cursor)
{
        return store->ops->list_submissions(store->be, filters, cursor, limit, ret_items, ret_next_cursor);
}

int store_stats(Store *store, json_t **ret_stats)
{
        return store->ops->stats(store->be, ret_stats);
}

int store_queue_depth(Store *store, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running)
{
        return store->ops->queue_depth(store->be, ret_queued, ret_compiled, ret_running);
}

int store_query_view(Store *store, const char *view, int limit, json_t **ret_rows)
{
        return store->ops->query_view(store->be, view, limit, ret_rows);
}

int store_schema_version(Store *store, int *ret_version)
{
        return store->ops->schema_version(store->be, ret_version);
}

int store_dashboard_rows(Store *store, StoreDash q, json_t *args, json_t **ret_rows)
{
        return store->ops->dashboard_rows(store->be, q, args, ret_rows);
}

int store_cache_get(Store *store, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                    size_t *ret_cubin_len)
{
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        int r;

        if (!key)
                return -EINVAL;
        r = store->ops->tx_begin(store->be, true);
        if (r < 0)
                return r;
        r = store->ops->tx->cache_get(store->be, key, &compile, &cubin, &len);
        /* A miss is committed too: it carries the miss count. */
        if (r == STORE_E_NOT_FOUND) {
                r = store->ops->tx_end(store->be, 0);
                r = r < 0 ? r : STORE_E_NOT_FOUND;
        } else {
                r = store->ops->tx_end(store->be, r);
        }
        if (r == 0) {
                *ret_compile = compile;
                compile = NULL;
                if (ret_cubin) {
                        *ret_cubin = cubin;
                        cubin = NULL;
                }
                if (ret_cubin_len)
                        *ret_cubin_len = len;
        }
        json_decref(compile);
        free(cubin);
        return r;
}

int store_cache_put(Store *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin,
                    size_t cubin_len)
{
        char *text;
        int r;

        if (!key || !compile)
                return -EINVAL;
        if (cubin_len > LIMIT_CUBIN_BYTES)
                return -E2BIG;
        text = json_dumps(compile, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        r = store->ops->cache_put(store->be, key, text, cubin, cubin_len);
        free(text);
        return note_write(r, true);
}

int store_cache_prune(Store *store, int64_t max_bytes, int64_t *ret_deleted)
{
        return store->ops->cache_prune(store->be, max_bytes, ret_deleted);
}

int store_token_create(Store *store, const char *name, const uint8_t hash[32], json_t *limits,
                       int64_t *ret_id)
{
        return store->ops->token_create(store->be, name, hash, limits, ret_id);
}

int store_token_revoke(Store *store, const char *name)
{
        return store->ops->token_revoke(store->be, name);
}

int store_token_lookup(Store *store, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits)
{
        if (!hash)
                return -EINVAL;
        return store->ops->token_lookup(store->be, hash, ret_id, ret_limits);
}

int store_token_list(Store *store, json_t **ret_list)
{
        return store->ops->token_list(store->be, ret_list);
}

int store_secret(Store *store, uint8_t ret_secret[32])
{
        return store->ops->secret(store->be, ret_secret);
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
