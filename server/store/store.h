/*
 * store - the queue and the history, in SQLite (one host) or PostgreSQL (a
 * fleet of hosts on one database). Only the supervisor opens the database.
 * This header is the contract; server/store/store.c picks the backend from the
 * path given to store_open(), and the operations (server/store/store_queue.c,
 * server/store/store_read.c) run over that backend's primitives,
 * server/store/store_sqlite.c or server/store/store_pg.c (server/store/store_backend.h;
 * docs/store.md: tables, views, durability, fleets).
 *
 * A Store is one database connection: use it from one thread at a time. The
 * server keeps one per thread that needs it (HTTP pool threads check one out
 * of a StorePool; the dispatcher owns its own; the ingest writer owns its
 * own, server/store/ingest.h). The schema comes from migrations/NNN_*.sql,
 * embedded at build time and applied at store_open() under PRAGMA
 * user_version; a database newer than the binary is refused.
 *
 * Durability: WAL, synchronous=FULL on the transactions that accept
 * submissions (an acknowledged submission survives kill -9 and power loss),
 * NORMAL elsewhere (a lost claim or result after power loss is redone);
 * BEGIN IMMEDIATE for every write; busy_timeout set.
 *
 * States: queued -> compiling -> compiled -> running -> done, and
 * queued -> done (cancelled). A claim takes a lease (owner, expiry) and
 * counts an attempt; heartbeats extend it; store_reap_collect() puts expired leases
 * back one stage, or ends the job as internal_error once the stage has been
 * claimed max_attempts times.
 *
 * PostgreSQL: the same states and tables; claims lock the chosen row with
 * FOR UPDATE SKIP LOCKED, so hosts claiming at once never wait on one
 * another's row nor take the same job. Commits that add work or finish a job
 * send NOTIFY kevald_work / kevald_done (payload: the id), which
 * store_listen() and store_next_event() receive (server/dispatch/storewatch.c).
 *
 * Return codes: 0, a positive STORE_E_* outcome, or a negative errno
 * (-EBUSY lock timeout, -EIO, -ENOSPC, -ENOMEM, -EINVAL bad argument,
 * -EBADMSG corrupt database or stored JSON, -ENOTCONN the database server is
 * unreachable: the call did nothing durable, and the connection is being
 * re-established, so a later call may succeed).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Store Store;

enum {
        STORE_E_EMPTY = 1,      /* nothing to claim */
        STORE_E_NOT_FOUND = 2,  /* no such row (or not this token's) */
        STORE_E_CONFLICT = 3,   /* idempotency key reused with another body; cancel of a
                                 * non-queued job; lease not held; token name taken */
        STORE_E_NEWER_DB = 4,   /* database user_version above what this binary knows */
        STORE_E_QUOTA = 5,      /* token's queued quota would be exceeded */
        STORE_E_FULL = 6,       /* queue depth limit reached */
};

typedef enum { STAGE_COMPILE = 0, STAGE_RUN = 1 } Stage;

/* One submission to insert: the normalized request (spec_submission_validate()). */
typedef struct StoreNew {
        json_t *request;        /* borrowed: normalized submission JSON (source inside);
                                 * its "tags" object is copied to the row */
        const char *request_json; /* optional: @request already serialized (compact); used
                                 * instead of dumping @request when not NULL */
        const char *task;       /* task name, or NULL for compile-only without a task */
        const char *mode;       /* "full" | "compile" */
        int priority;           /* larger first: 1 interactive, 0 bulk */
        int64_t token_id;       /* 0 when auth is off; the same for all subs of a request */
        const char *verdict;    /* NULL: queued. "rejected": done at insert, in the same transaction,
                                 * with @result (a candidate refused at acceptance, docs/internals.md) */
        json_t *result;         /* borrowed: the result of a done-at-insert row; NULL otherwise */
} StoreNew;

/* One POST: 1..n submissions, accepted or refused as a whole. */
typedef struct StoreInsert {
        const StoreNew *subs;   /* borrowed, @n of them */
        size_t n;               /* 1..LIMIT_BATCH_MAX */
        const char *idem_key;   /* Idempotency-Key or NULL (≤ LIMIT_IDEMPOTENCY_KEY_BYTES) */
        const uint8_t *body_hash; /* 32 bytes, sha256 of the body; required with idem_key */
        int64_t max_queued_total; /* not-done submissions allowed in all; 0 = unlimited */
        int64_t max_queued_token; /* not-done submissions allowed for this token; 0 = unlimited */
} StoreInsert;

typedef struct StoreJob {
        int64_t id;
        int attempts;           /* claims of this stage, this one included (1 on the first) */
        int priority;
        int64_t token_id;
        char *task;             /* may be NULL */
        char *mode;
        json_t *request;        /* new reference: the normalized submission */
        json_t *compile;        /* new reference or NULL: the compile section, set after compile */
} StoreJob;

void store_job_free(StoreJob *job);

/* "postgresql://..." or "postgres://..." (libpq URIs), or "postgresql:" for the
 * PG* environment, select PostgreSQL; any other path is a SQLite file. */
int store_open(const char *path, Store **ret_store);
/* An existing SQLite store, read-only (store.c: store_open_readonly()): for `kevald store copy`. */
int store_open_readonly(const char *path, Store **ret_store);
/* The storage cannot write now: the -errno of a recent failed write, or 0 (store.c). */
int store_write_fault(double within_s);
/* @r (a store call's return) says the storage cannot write: full, read-only, I/O error. */
bool store_error_is_storage(int r);
void store_close(Store *store);
bool store_path_is_pg(const char *path);
/* The path with any password replaced by "***", for messages (a new string; free()). */
char *store_path_redacted(const char *path);

/*
 * Host identity (fleets): the id this process records on its leases and in
 * the hosts table, 1..LIMIT_HOST_ID_BYTES of [A-Za-z0-9._-]. Set once at
 * start-up (serve.c, --host-id; default the hostname) before any store_open().
 */
int store_set_host_id(const char *host_id);
const char *store_host_id(void);
/* Record that this host is alive (hosts.last_seen); a no-op on SQLite. */
int store_host_beat(Store *store);

/*
 * This process's leases, one owner for both of their holders: the
 * dispatcher claims and renews them, and on PostgreSQL storewatch renews
 * them too, from its own thread (store_rules.c: store_lease_plan()).
 */
#define STORE_LEASE_OWNER_BYTES 96
int store_lease_plan(double lease_s, char ret_owner[STORE_LEASE_OWNER_BYTES], double *ret_renew_s);

/**
 * store_copy() - copy a single host's SQLite history into an empty PostgreSQL store
 * @from:       a SQLite store; borrowed, only read
 * @to:         a PostgreSQL store; borrowed
 * @force:      copy even when @to already holds submissions or tokens (its
 *              rows of the copied tables are replaced)
 * @ret_report: on success, a new object {table: rows copied}
 *
 * Every table is copied row for row, ids kept (the sequences are moved past
 * them), the secret too (seeds stay reproducible); the aggregates and
 * rollups are copied as they are, with the target's triggers off for the
 * copy. One transaction: all or nothing.
 *
 * Return: 0, STORE_E_CONFLICT when @to is not empty and !@force, -EINVAL
 * when @from is not SQLite or @to not PostgreSQL, or a negative errno.
 */
int store_copy(Store *from, Store *to, bool force, json_t **ret_report);

/* Wake-ups from other hosts' commits (PostgreSQL LISTEN/NOTIFY). */
typedef enum { STORE_EVENT_WORK = 1, STORE_EVENT_DONE = 2 } StoreEventKind;
typedef struct StoreEvent {
        StoreEventKind kind;
        int64_t id;             /* STORE_EVENT_DONE: the finished job; 0 otherwise */
} StoreEvent;
/* Subscribe this connection to kevald_work and kevald_done: -EOPNOTSUPP on SQLite. */
int store_listen(Store *store);
/* Wait up to @timeout_ms for one event: 0, STORE_E_EMPTY on timeout, or a negative errno. */
int store_next_event(Store *store, int timeout_ms, StoreEvent *ret_ev);

/* Acceptance. */
int store_insert_request(Store *store, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed);
int store_insert_submissions(Store *store, const StoreNew *subs, size_t n, int64_t *ret_ids,
                             const char *idem_key, const uint8_t body_hash[32], int64_t max_queued_total,
                             int64_t max_queued_token);
int store_prune_idempotency(Store *store, double older_than_s, int64_t *ret_deleted);
/* Group commit (server/store/ingest.c): several store_insert_request() in one durable transaction. */
int store_begin_group(Store *store);
int store_commit_group(Store *store);

/* Queue. */
int store_claim_next(Store *store, Stage stage, const char *owner, double lease_s, StoreJob **ret_job);
int store_heartbeat_owner(Store *store, const char *owner, double lease_s, int *ret_extended);
int store_set_compiled(Store *store, int64_t id, const char *owner, json_t *compile_section);
int store_finish(Store *store, int64_t id, const char *owner, const char *verdict, double speedup,
                 json_t *result);
int store_requeue(Store *store, int64_t id, const char *owner, Stage stage);
int store_requeue_uncharged(Store *store, int64_t id, const char *owner, Stage stage);
int store_reap_collect(Store *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids,
                       size_t *ret_n_failed);
int store_requeue_all_leases(Store *store);   /* at start-up: every lease of a dead supervisor */
int store_leases_of(Store *store, const char *owner, json_t **ret_leases);
int store_cancel(Store *store, int64_t id, int64_t token_id);

/* Reads. */
int store_get_submission(Store *store, int64_t id, json_t **ret_obj);
int store_list_submissions(Store *store, json_t *filters, int64_t cursor, int limit,
                           json_t **ret_items, int64_t *ret_next_cursor);
int store_stats(Store *store, json_t **ret_stats);
int store_queue_depth(Store *store, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running);

/*
 * Dashboard reads (docs/dashboard.md): named queries over the v_* views of
 * migrations/006_dashboard.sql, so that the built-in page shows what SQL and
 * Grafana users read. Arguments are bound in order (?1, ?2, ...); each
 * query's comment below lists them (its SQL: server/store/store_sql.def).
 */
typedef enum {
        STORE_DASH_QUEUE = 0,      /* (): v_queue_depth */
        STORE_DASH_ACTIVITY,       /* (since): v_activity_minutely from minute_start since */
        STORE_DASH_GPU_BUSY,       /* (since): v_gpu_busy_minutely */
        STORE_DASH_RUNS,           /* (substring|null, limit, offset): v_run_summary, latest first */
        STORE_DASH_RUN,            /* (run_id): v_run_summary */
        STORE_DASH_RUN_STEPS,      /* (run_id, from_step, to_step): v_run_steps */
        STORE_DASH_RUN_SPEEDUPS,   /* (run_id, from_step, to_step): v_run_step_speedups */
        STORE_DASH_RUN_TASKS,      /* (run_id, from_step, to_step): v_run_step_tasks summed per task */
        STORE_DASH_TASKS,          /* (substring|null, limit, offset): v_task_summary, busiest first */
        STORE_DASH_TASK,           /* (task): v_task_summary */
        STORE_DASH_TASK_VERDICTS,  /* (task): v_task_verdicts */
        STORE_DASH_TASK_SPEEDUPS,  /* (task): v_task_speedup_hist */
        STORE_DASH_LEADERBOARD,    /* (task, limit, offset): v_task_leaderboard, fastest first */
        STORE_DASH_TURN,           /* (id): v_submission_turns */
        STORE_DASH_CHILDREN,       /* (parent, token_id or -1 for all, limit): v_submission_turns */
        STORE_DASH_REQUEST,        /* (id): the stored request (source inside) */
        STORE_DASH_HISTOGRAMS,     /* (): v_metric_histograms */
        STORE_DASH_RUN_VERDICTS,   /* (run_id, from_step, to_step): v_run_step_verdicts (migration 007) */
        STORE_DASH_TASKS_NAMED,    /* (JSON array of names, as text): v_task_summary of those tasks */
        STORE_DASH_REFERENCES,     /* (JSON array of names, as text): v_task_reference_times of those tasks */
        STORE_DASH__COUNT,
} StoreDash;

/**
 * store_dashboard_rows() - run dashboard query @q
 * @args:     array of values to bind (string, integer, real or null), or NULL; borrowed
 * @ret_rows: on success, a new array of objects keyed by column name
 * Return: 0, -EINVAL for a bad query or argument, or a negative errno.
 */
int store_dashboard_rows(Store *store, StoreDash q, json_t *args, json_t **ret_rows);

/* Compile cache (key = sha256 of language, source, options, arch, name expressions, nvrtc version). */
int store_cache_get(Store *store, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                    size_t *ret_cubin_len);
int store_cache_put(Store *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin,
                    size_t cubin_len);
/* Drop least recently used entries until the cache holds at most @max_bytes
 * (LIMIT_COMPILE_CACHE_BYTES_DEFAULT is the default); the dispatcher calls it now and then. */
int store_cache_prune(Store *store, int64_t max_bytes, int64_t *ret_deleted);

/* Tokens (hash = sha256 of the token text). */
int store_token_create(Store *store, const char *name, const uint8_t hash[32], json_t *limits,
                       int64_t *ret_id);
int store_token_revoke(Store *store, const char *name);
int store_token_lookup(Store *store, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits);
int store_token_list(Store *store, json_t **ret_list);

/* Server secret (seeds are derived from it; created on first open). */
int store_secret(Store *store, uint8_t ret_secret[32]);

/* Current time as REAL unix seconds (what the store records). */
double store_now(void);

/*
 * StorePool - a mutex-protected set of connections for the HTTP threads'
 * reads (and their cancels). storepool_get() blocks until one is free.
 */
typedef struct StorePool StorePool;

int storepool_open(const char *path, int n, StorePool **ret_pool);
Store *storepool_get(StorePool *pool);
void storepool_put(StorePool *pool, Store *store);
void storepool_close(StorePool *pool);
