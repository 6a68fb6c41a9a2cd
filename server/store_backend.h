/*
 * store_backend - what the store's front (server/store.c) and its two
 * backends share; not for use outside server/store*.c. store.h stays the one
 * contract: store.c checks the arguments every backend would check alike,
 * picks the backend's StoreOps table from the path given to store_open() (a
 * postgresql:// URI, "postgresql:" for the PG* environment, else a SQLite
 * file), and calls through it. Each backend exports its table and nothing
 * else. Only store_sqlite.c includes <sqlite3.h>; only store_pg.c includes
 * <libpq-fe.h>.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/limits.h"
#include "server/store.h"

/* ---- rules both backends follow, written once (server/store_rules.c) ---- */

/* A parsed GET /v1/submissions query (store_list_query_parse()). */
typedef struct StoreListQuery {
        const char *strs[4];            /* task, verdict, state, run_id (store_list_columns); NULL: any */
        bool has_token;
        int64_t token_id;
        double since;                   /* NAN: no lower bound on created_at */
        char label_k[LIMIT_TAG_STRING_BYTES + 1];
        const char *label_v;            /* NULL: no label filter; borrowed from the filters */
        bool label_is_num;              /* label_v reads as a number: a number label equal to it matches too */
        double label_num;
        bool has_step;                  /* tags.step = step (best with run_id, which is indexed) */
        int64_t step;
        bool with_result;               /* each item carries its result once done */
        int64_t cursor;                 /* 0: from the newest */
        int limit;                      /* 1..LIMIT_LIST_PAGE_MAX */
} StoreListQuery;

/* Column names of StoreListQuery.strs, in order. */
extern const char *const store_list_columns[4];

int store_list_query_parse(json_t *filters, int64_t cursor, int limit, StoreListQuery *ret_q);
int store_parse_time(const char *text, double *ret_t);
char *store_ids_encode(const int64_t *ids, size_t n);
int store_ids_decode(const char *text, size_t max, int64_t **ret_ids, size_t *ret_n);
int store_check_insert(const StoreInsert *ins);
/* Submissions of @ins that join the queue (not done at insert): what quotas count. */
int64_t store_insert_queued(const StoreInsert *ins);
json_t *store_internal_error_result(const char *task, const char *state, int attempts);

int store_migration_number(const char *name);
int store_check_finish(const char *verdict, json_t *result, char **ret_text);

/* A leased row as the reaper reads it (StoreTx.leases). */
typedef struct StoreLease {
        int64_t id;
        int attempts;           /* claims of its stage, this one included */
        char state[16];         /* "compiling" or "running" */
        char *task;             /* NULL: none */
} StoreLease;

void store_leases_free(StoreLease *leases, size_t n);

/*
 * StoreTx - the primitives a backend lends to the rules below, each run
 * inside the backend's current write transaction (@be: its connection).
 */
typedef struct StoreTx {
        /* queue_counts.active += @n for @token_id (-1: the total row) */
        int (*add_active)(void *be, int64_t token_id, int64_t n);
        /* task_stats.submissions += @n for @task (NULL: the "" row) */
        int (*add_task)(void *be, const char *task, int64_t n);
        /* Move @id to done with @verdict and store @result_text: 0, STORE_E_NOT_FOUND,
         * STORE_E_CONFLICT (done already; @owner given and not the lease holder), or -errno. */
        int (*finish)(void *be, int64_t id, const char *owner, const char *verdict, double speedup,
                      const char *result_text);
        /* A leased row back one stage (compiling -> queued, running -> compiled), lease cleared. */
        int (*back_one)(void *be, int64_t id);
        /* The leases expired before @before, or (@before NaN) every lease this host holds
         * (at start-up: its dead predecessor's; SQLite: all of them), locked until the end of
         * the transaction: a new array (store_leases_free()). */
        int (*leases)(void *be, double before, StoreLease **ret, size_t *ret_n);
        /* The compile cache entry of @key, counting the hit or (STORE_E_NOT_FOUND) the miss;
         * every out-parameter given, *@ret_cubin NULL when none is stored. */
        int (*cache_get)(void *be, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                         size_t *ret_cubin_len);
        /* As StoreOps.idem_get, in the insert's transaction. */
        int (*idem_get)(void *be, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                        int64_t **ret_ids, size_t *ret_n);
} StoreTx;

int store_idem_replay(const StoreTx *tx, void *be, const StoreInsert *ins, int64_t *ids, bool *ret_replayed);
int store_count_inserted(const StoreTx *tx, void *be, const StoreInsert *ins);
int store_finish_at_insert(const StoreTx *tx, void *be, const StoreInsert *ins, const int64_t *ids);
int store_reap_one(const StoreTx *tx, void *be, int64_t id, const char *state, int attempts, const char *task,
                   int max_attempts, int *requeued, int64_t *failed, size_t *n_failed);

/* What store_stats() reports, as a backend gathers it (store_stats_object()). */
typedef struct StoreStatsParts {
        json_t *states, *verdicts, *tasks;      /* new references, or NULL when out of memory */
        int64_t entries, hits, misses, bytes;   /* the compile cache */
        int64_t depth, total;                   /* queue_counts' total row; task_stats' submissions */
} StoreStatsParts;

int store_stats_object(StoreStatsParts *parts, int r, json_t **ret_stats);

/*
 * StoreRow - one row of a backend's result, read column by column: what the
 * row builders below see of SQLite's statement or PostgreSQL's result.
 */
typedef struct StoreRow StoreRow;
struct StoreRow {
        void *res;              /* the statement (SQLite) or result (PostgreSQL); borrowed */
        int i;                  /* the row in @res (PostgreSQL) */
        bool (*is_null)(const StoreRow *row, int col);
        int64_t (*i64)(const StoreRow *row, int col);          /* 0 for NULL */
        double (*real)(const StoreRow *row, int col);          /* for a non-NULL column */
        const char *(*text)(const StoreRow *row, int col, size_t *ret_len); /* NULL for NULL; @ret_len may be NULL */
};

json_t *store_row_json(const StoreRow *row, int col);
json_t *store_row_submission(const StoreRow *row, bool with_result);
json_t *store_row_token(const StoreRow *row);

/* One value of a copied row (store_copy()): NULL, integer, real, text or bytes. */
typedef enum { STORE_VAL_NULL, STORE_VAL_INT, STORE_VAL_REAL, STORE_VAL_TEXT, STORE_VAL_BLOB } StoreValType;
typedef struct StoreVal {
        StoreValType type;
        int64_t i;
        double d;
        const void *p;          /* TEXT (NUL-terminated) or BLOB; borrowed for the callback */
        size_t len;
} StoreVal;
/* Called per row with the column names and values; non-zero stops the copy with that code. */
typedef int (*StoreRowFn)(void *arg, int n, const char *const *names, const StoreVal *vals);

/*
 * StoreOps - one backend's operations, filled by store_sqlite.c and
 * store_pg.c and chosen once in store_open(). Each takes the backend's
 * connection (@be, what ->open gave) first; unless its comment says
 * otherwise, the rest of each signature, its arguments and its returns are
 * those of the store.h call of the same name, which store.c forwards through
 * this table after the checks common to both. Adding an operation: its
 * store.h prototype, a member here with its one-line forward in store.c, and
 * each backend's function with its entry in that backend's table. A NULL
 * member: the backend does not have it (the comment says what store.c does
 * then).
 */
typedef struct StoreOps {
        const char *name;               /* store_backend_name() */
        bool claim_gate;                /* store.c's claim gate applies (a fleet that LISTENs) */
        const StoreTx *tx;              /* primitives that store.c runs between tx_begin and tx_end */
        /* A write transaction (-EINVAL inside a group); @lazy: its commit need not wait for the
         * disk (PostgreSQL: synchronous_commit off; SQLite: as any). */
        int (*tx_begin)(void *be, bool lazy);
        int (*tx_end)(void *be, int r); /* commit when @r is 0, else roll back: @r, or the commit's failure */
        int (*open)(const char *path, void **ret_be);
        int (*open_readonly)(const char *path, void **ret_be);         /* NULL: store_open_readonly() refuses */
        void (*close)(void *be);
        int (*insert_request)(void *be, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed);
        /* The ids (at most @max) an idempotency key stands for: 0, STORE_E_NOT_FOUND (a new key),
         * STORE_E_CONFLICT (stored with another body hash), -EBADMSG, or -errno. */
        int (*idem_get)(void *be, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                        int64_t **ret_ids, size_t *ret_n);
        int (*prune_idempotency)(void *be, double older_than_s, int64_t *ret_deleted);
        int (*begin_group)(void *be);
        int (*commit_group)(void *be);
        void (*rollback_group)(void *be);
        int (*claim_next)(void *be, Stage stage, const char *owner, double lease_s, StoreJob **ret_job);
        int (*heartbeat)(void *be, int64_t id, const char *owner, double lease_s);
        int (*heartbeat_owner)(void *be, const char *owner, double lease_s, int *ret_extended);
        int (*host_beat)(void *be, const char *host_id);               /* NULL: a no-op (one host) */
        int (*set_cache_key)(void *be, int64_t id, const uint8_t key[32]);
        /* @compile_text: the compile section as JSON (store.c checked and dumped it) */
        int (*set_compiled)(void *be, int64_t id, const char *owner, const char *compile_text);
        int (*requeue)(void *be, int64_t id, const char *owner, Stage stage);
        int (*cancel)(void *be, int64_t id, int64_t token_id);
        int (*get_submission)(void *be, int64_t id, json_t **ret_obj);
        int (*list_submissions)(void *be, json_t *filters, int64_t cursor, int limit, json_t **ret_items,
                                int64_t *ret_next_cursor);
        int (*stats)(void *be, json_t **ret_stats);
        int (*queue_depth)(void *be, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running);
        int (*query_view)(void *be, const char *view, int limit, json_t **ret_rows);
        int (*schema_version)(void *be, int *ret_version);
        int (*dashboard_rows)(void *be, StoreDash q, json_t *args, json_t **ret_rows);
        /* @compile_text: the compile section as JSON; @cubin_len within LIMIT_CUBIN_BYTES (store.c) */
        int (*cache_put)(void *be, const uint8_t key[32], const char *compile_text, const uint8_t *cubin,
                         size_t cubin_len);
        int (*cache_prune)(void *be, int64_t max_bytes, int64_t *ret_deleted);
        int (*token_create)(void *be, const char *name, const uint8_t hash[32], json_t *limits, int64_t *ret_id);
        int (*token_revoke)(void *be, const char *name);
        int (*token_lookup)(void *be, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits);
        int (*token_list)(void *be, json_t **ret_list);
        int (*secret)(void *be, uint8_t ret_secret[32]);
        /* Wake-ups (NULL: -EOPNOTSUPP, one host). */
        int (*listen)(void *be);
        int (*next_event)(void *be, int timeout_ms, StoreEvent *ret_ev);
        /* store_copy(): the source reads each row of a table (STORE_E_NOT_FOUND: no such table) ... */
        int (*each_row)(void *be, const char *table, StoreRowFn fn, void *arg);
        /* ... and the target takes them, in one transaction (NULL: not a copy source / target). */
        int (*copy_begin)(void *be, const char *const *tables, size_t n_tables, bool force);
        int (*copy_row)(void *be, const char *table, int n, const char *const *names, const StoreVal *vals);
        int (*copy_end)(void *be, const char *const *tables, size_t n_tables, int r);
} StoreOps;

extern const StoreOps store_sqlite_ops;        /* server/store_sqlite.c */
extern const StoreOps store_pg_ops;            /* server/store_pg.c */
