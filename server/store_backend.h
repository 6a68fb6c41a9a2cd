/*
 * store_backend - what the store's front (server/store.c) and its two
 * backends share; not for use outside server/store*.c. store.h stays the one
 * contract: store.c checks the arguments every backend would check alike,
 * picks the backend from the path given to store_open() (a postgresql://
 * URI, "postgresql:" for the PG* environment, else a SQLite file), and
 * forwards each call. Only store_sqlite.c includes <sqlite3.h>; only
 * store_pg.c includes <libpq-fe.h>.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/limits.h"
#include "server/store.h"

typedef struct StoreSqlite StoreSqlite;
typedef struct StorePg StorePg;

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

/* ---- SQLite (server/store_sqlite.c) ---- */
int store_sqlite_each_row(StoreSqlite *store, const char *table, StoreRowFn fn, void *arg);
int store_sqlite_open(const char *path, StoreSqlite **ret_store);
int store_sqlite_open_readonly(const char *path, StoreSqlite **ret_store);
void store_sqlite_close(StoreSqlite *store);
int store_sqlite_insert_request(StoreSqlite *store, const StoreInsert *ins, int64_t *ret_ids,
                                bool *ret_replayed);
int store_sqlite_idempotent_lookup(StoreSqlite *store, int64_t token_id, const char *idem_key,
                                   const uint8_t body_hash[32], json_t **ret_ids);
int store_sqlite_prune_idempotency(StoreSqlite *store, double older_than_s, int64_t *ret_deleted);
int store_sqlite_begin_group(StoreSqlite *store);
int store_sqlite_commit_group(StoreSqlite *store);
void store_sqlite_rollback_group(StoreSqlite *store);
int store_sqlite_claim_next(StoreSqlite *store, Stage stage, const char *owner, double lease_s,
                            StoreJob **ret_job);
int store_sqlite_heartbeat(StoreSqlite *store, int64_t id, const char *owner, double lease_s);
int store_sqlite_heartbeat_owner(StoreSqlite *store, const char *owner, double lease_s, int *ret_extended);
int store_sqlite_set_cache_key(StoreSqlite *store, int64_t id, const uint8_t key[32]);
int store_sqlite_set_compiled(StoreSqlite *store, int64_t id, const char *owner, json_t *compile_section);
int store_sqlite_finish(StoreSqlite *store, int64_t id, const char *owner, const char *verdict,
                        double speedup, json_t *result);
int store_sqlite_requeue(StoreSqlite *store, int64_t id, const char *owner, Stage stage);
int store_sqlite_reap(StoreSqlite *store, int max_attempts, int *ret_requeued, int *ret_failed);
int store_sqlite_reap_collect(StoreSqlite *store, int max_attempts, int *ret_requeued,
                              int64_t **ret_failed_ids, size_t *ret_n_failed);
int store_sqlite_requeue_all_leases(StoreSqlite *store);
int store_sqlite_cancel(StoreSqlite *store, int64_t id, int64_t token_id);
int store_sqlite_get_submission(StoreSqlite *store, int64_t id, json_t **ret_obj);
int store_sqlite_list_submissions(StoreSqlite *store, json_t *filters, int64_t cursor, int limit,
                                  json_t **ret_items, int64_t *ret_next_cursor);
int store_sqlite_stats(StoreSqlite *store, json_t **ret_stats);
int store_sqlite_queue_depth(StoreSqlite *store, int64_t *ret_queued, int64_t *ret_compiled,
                             int64_t *ret_running);
int store_sqlite_query_view(StoreSqlite *store, const char *view, int limit, json_t **ret_rows);
int store_sqlite_schema_version(StoreSqlite *store, int *ret_version);
int store_sqlite_dashboard_rows(StoreSqlite *store, StoreDash q, json_t *args, json_t **ret_rows);
int store_sqlite_cache_get(StoreSqlite *store, const uint8_t key[32], json_t **ret_compile,
                           uint8_t **ret_cubin, size_t *ret_cubin_len);
int store_sqlite_cache_put(StoreSqlite *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin,
                           size_t cubin_len);
int store_sqlite_cache_prune(StoreSqlite *store, int64_t max_bytes, int64_t *ret_deleted);
int store_sqlite_token_create(StoreSqlite *store, const char *name, const uint8_t hash[32], json_t *limits,
                              int64_t *ret_id);
int store_sqlite_token_revoke(StoreSqlite *store, const char *name);
int store_sqlite_token_lookup(StoreSqlite *store, const uint8_t hash[32], int64_t *ret_id,
                              json_t **ret_limits);
int store_sqlite_token_list(StoreSqlite *store, json_t **ret_list);
int store_sqlite_secret(StoreSqlite *store, uint8_t ret_secret[32]);

/* ---- PostgreSQL (server/store_pg.c) ---- */
int store_pg_open(const char *dsn, StorePg **ret_store);
void store_pg_close(StorePg *store);
int store_pg_insert_request(StorePg *store, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed);
int store_pg_idempotent_lookup(StorePg *store, int64_t token_id, const char *idem_key,
                               const uint8_t body_hash[32], json_t **ret_ids);
int store_pg_prune_idempotency(StorePg *store, double older_than_s, int64_t *ret_deleted);
int store_pg_begin_group(StorePg *store);
int store_pg_commit_group(StorePg *store);
void store_pg_rollback_group(StorePg *store);
int store_pg_claim_next(StorePg *store, Stage stage, const char *owner, double lease_s, StoreJob **ret_job);
int store_pg_heartbeat(StorePg *store, int64_t id, const char *owner, double lease_s);
int store_pg_heartbeat_owner(StorePg *store, const char *owner, double lease_s, int *ret_extended);
int store_pg_set_cache_key(StorePg *store, int64_t id, const uint8_t key[32]);
int store_pg_set_compiled(StorePg *store, int64_t id, const char *owner, json_t *compile_section);
int store_pg_finish(StorePg *store, int64_t id, const char *owner, const char *verdict, double speedup,
                    json_t *result);
int store_pg_requeue(StorePg *store, int64_t id, const char *owner, Stage stage);
int store_pg_reap(StorePg *store, int max_attempts, int *ret_requeued, int *ret_failed);
int store_pg_reap_collect(StorePg *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids,
                          size_t *ret_n_failed);
int store_pg_requeue_all_leases(StorePg *store);
int store_pg_cancel(StorePg *store, int64_t id, int64_t token_id);
int store_pg_get_submission(StorePg *store, int64_t id, json_t **ret_obj);
int store_pg_list_submissions(StorePg *store, json_t *filters, int64_t cursor, int limit, json_t **ret_items,
                              int64_t *ret_next_cursor);
int store_pg_stats(StorePg *store, json_t **ret_stats);
int store_pg_queue_depth(StorePg *store, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running);
int store_pg_query_view(StorePg *store, const char *view, int limit, json_t **ret_rows);
int store_pg_schema_version(StorePg *store, int *ret_version);
int store_pg_dashboard_rows(StorePg *store, StoreDash q, json_t *args, json_t **ret_rows);
int store_pg_cache_get(StorePg *store, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                       size_t *ret_cubin_len);
int store_pg_cache_put(StorePg *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin,
                       size_t cubin_len);
int store_pg_cache_prune(StorePg *store, int64_t max_bytes, int64_t *ret_deleted);
int store_pg_token_create(StorePg *store, const char *name, const uint8_t hash[32], json_t *limits,
                          int64_t *ret_id);
int store_pg_token_revoke(StorePg *store, const char *name);
int store_pg_token_lookup(StorePg *store, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits);
int store_pg_token_list(StorePg *store, json_t **ret_list);
int store_pg_secret(StorePg *store, uint8_t ret_secret[32]);
int store_pg_host_beat(StorePg *store, const char *host_id);
int store_pg_copy_begin(StorePg *store, const char *const *tables, size_t n_tables, bool force);
int store_pg_copy_row(StorePg *store, const char *table, int n, const char *const *names, const StoreVal *vals);
int store_pg_copy_end(StorePg *store, const char *const *tables, size_t n_tables, int r);
int store_pg_listen(StorePg *store);
int store_pg_next_event(StorePg *store, int timeout_ms, StoreEvent *ret_ev);
