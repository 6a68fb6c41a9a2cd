/* placeholder: replaced by the libpq backend */
#include <errno.h>
#include "server/store_backend.h"
int store_pg_open(const char *dsn, StorePg **ret_store) { return -EOPNOTSUPP; }
void store_pg_close(StorePg *store) {}
int store_pg_host_beat(StorePg *store, const char *host_id) { return -EOPNOTSUPP; }
int store_pg_listen(StorePg *store) { return -EOPNOTSUPP; }
int store_pg_next_event(StorePg *store, int timeout_ms, StoreEvent *ret_ev) { return -EOPNOTSUPP; }

int store_pg_insert_request(StorePg *store, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed) { return -EOPNOTSUPP; }
int store_pg_idempotent_lookup(StorePg *store, int64_t token_id, const char *idem_key, const uint8_t body_hash[32], json_t **ret_ids) { return -EOPNOTSUPP; }
int store_pg_prune_idempotency(StorePg *store, double older_than_s, int64_t *ret_deleted) { return -EOPNOTSUPP; }
int store_pg_begin_group(StorePg *store) { return -EOPNOTSUPP; }
int store_pg_commit_group(StorePg *store) { return -EOPNOTSUPP; }
void store_pg_rollback_group(StorePg *store) {}
int store_pg_claim_next(StorePg *store, Stage stage, const char *owner, double lease_s, StoreJob **ret_job) { return -EOPNOTSUPP; }
int store_pg_heartbeat(StorePg *store, int64_t id, const char *owner, double lease_s) { return -EOPNOTSUPP; }
int store_pg_heartbeat_owner(StorePg *store, const char *owner, double lease_s, int *ret_extended) { return -EOPNOTSUPP; }
int store_pg_set_cache_key(StorePg *store, int64_t id, const uint8_t key[32]) { return -EOPNOTSUPP; }
int store_pg_set_compiled(StorePg *store, int64_t id, const char *owner, json_t *compile_section) { return -EOPNOTSUPP; }
int store_pg_finish(StorePg *store, int64_t id, const char *owner, const char *verdict, double speedup, json_t *result) { return -EOPNOTSUPP; }
int store_pg_requeue(StorePg *store, int64_t id, const char *owner, Stage stage) { return -EOPNOTSUPP; }
int store_pg_reap(StorePg *store, int max_attempts, int *ret_requeued, int *ret_failed) { return -EOPNOTSUPP; }
int store_pg_reap_collect(StorePg *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids, size_t *ret_n_failed) { return -EOPNOTSUPP; }
int store_pg_requeue_all_leases(StorePg *store) { return -EOPNOTSUPP; }
int store_pg_cancel(StorePg *store, int64_t id, int64_t token_id) { return -EOPNOTSUPP; }
int store_pg_get_submission(StorePg *store, int64_t id, json_t **ret_obj) { return -EOPNOTSUPP; }
int store_pg_list_submissions(StorePg *store, json_t *filters, int64_t cursor, int limit, json_t **ret_items, int64_t *ret_next_cursor) { return -EOPNOTSUPP; }
int store_pg_stats(StorePg *store, json_t **ret_stats) { return -EOPNOTSUPP; }
int store_pg_queue_depth(StorePg *store, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running) { return -EOPNOTSUPP; }
int store_pg_query_view(StorePg *store, const char *view, int limit, json_t **ret_rows) { return -EOPNOTSUPP; }
int store_pg_schema_version(StorePg *store, int *ret_version) { return -EOPNOTSUPP; }
int store_pg_dashboard_rows(StorePg *store, StoreDash q, json_t *args, json_t **ret_rows) { return -EOPNOTSUPP; }
int store_pg_cache_get(StorePg *store, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin, size_t *ret_cubin_len) { return -EOPNOTSUPP; }
int store_pg_cache_put(StorePg *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin, size_t cubin_len) { return -EOPNOTSUPP; }
int store_pg_cache_prune(StorePg *store, int64_t max_bytes, int64_t *ret_deleted) { return -EOPNOTSUPP; }
int store_pg_token_create(StorePg *store, const char *name, const uint8_t hash[32], json_t *limits, int64_t *ret_id) { return -EOPNOTSUPP; }
int store_pg_token_revoke(StorePg *store, const char *name) { return -EOPNOTSUPP; }
int store_pg_token_lookup(StorePg *store, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits) { return -EOPNOTSUPP; }
int store_pg_token_list(StorePg *store, json_t **ret_list) { return -EOPNOTSUPP; }
int store_pg_secret(StorePg *store, uint8_t ret_secret[32]) { return -EOPNOTSUPP; }
