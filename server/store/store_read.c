/*
 * store_read - the store's reads, tokens and secret, written once over a
 * backend's primitives (store_backend.h): a submission and a page of them,
 * the stats, the queue depth, the dashboard views and queries, API tokens,
 * and the server secret. The SQL is store_sql.def's, but for the list query,
 * built here from its filters with the few dialect bits that differ.
 */
#include "server/store/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"
#include "server/store/store_test.h"

/**
 * store_get_submission() - the API object of one submission
 * @store:   open store; borrowed
 * @id:      the submission
 * @ret_obj: on success, a new object: id, state, verdict (null until done),
 *           task, mode, priority ("interactive"|"bulk"), created_at,
 *           started_at, finished_at (RFC 3339 or null), attempts, speedup
 *           (or null), tags, and result once done
 * Return: 0, STORE_E_NOT_FOUND, or a negative errno (-EBADMSG when stored JSON does not parse).
 */
int store_get_submission(Store *store, int64_t id, json_t **ret_obj)
{
        StoreVal a[] = { SV_INT(id) };
        StoreRow row;
        json_t *o;
        int r = store_db_first(store, STORE_Q_GET_SUB, NULL, a, SV_N(a), &row);

        if (r <= 0)
                return r < 0 ? r : STORE_E_NOT_FOUND;
        o = store_row_submission(&row, true);
        r = store_db_end(&row, o ? 0 : -EBADMSG);
        if (r == 0)
                *ret_obj = o;
        else
                json_decref(o);
        return r;
}

/*
 * The filters of a list query that differ between the dialects: the step in
 * the tags, and a label (?1 its key, ?2 its text value, ?3 its number or NULL).
 */
static const char *const list_step[2] = {
        " AND json_extract(s.tags, '$.step') = ?%d",
        " AND s.tags::jsonb -> 'step' = to_jsonb(?%d::bigint)",
};
static const char *const list_label[2] = {
        " AND EXISTS (SELECT 1 FROM json_each(s.tags, '$.labels') WHERE key = ?%1$d AND ((type = 'text' "
        "AND value = ?%2$d) OR (?%3$d IS NOT NULL AND type IN ('integer', 'real') AND value = ?%3$d)))",
        " AND CASE jsonb_typeof(s.tags::jsonb -> 'labels' -> ?%1$d::text) WHEN 'string' THEN "
        "s.tags::jsonb -> 'labels' ->> ?%1$d::text = ?%2$d::text WHEN 'number' THEN "
        "(s.tags::jsonb -> 'labels' ->> ?%1$d::text)::double precision = ?%3$d::double precision ELSE false END",
};

/* Append to @sql (room @cap, used *@len) the format @fmt with the next argument's number(s). */
#define LIST_ADD(fmt, ...)                                                                                    \
        (*len += (size_t)snprintf(sql + (*len < cap ? *len : cap), *len < cap ? cap - *len : 0, fmt, __VA_ARGS__))

/* The list query's text and arguments (at most 12) for @q. */
static int list_sql(const StoreListQuery *q, bool pg, char *sql, size_t cap, StoreVal *a, int *ret_n)
{
        size_t used = 0, *len = &used;
        int n = 0;

        a[n++] = SV_INT(q->cursor > 0 ? q->cursor : INT64_MAX);
        LIST_ADD("SELECT s.id, s.state, s.verdict, s.task, s.mode, s.priority, s.created_at, s.started_at, "
                 "s.finished_at, s.attempts, s.speedup, s.tags%s FROM submissions s%s WHERE s.id < ?1",
                 q->with_result ? ", r.result" : "",
                 q->with_result ? " LEFT JOIN submission_results r ON r.id = s.id" : "");
        for (int i = 0; i < 4; i++) {
                /* Most rows are done: SQLite walks ids downwards rather than sort every done row. */
                bool unindexed = !pg && i == 2 && q->strs[i] && !strcmp(q->strs[i], "done");
                if (!q->strs[i])
                        continue;
                a[n++] = SV_STR(q->strs[i]);
                LIST_ADD(" AND %ss.%s = ?%d", unindexed ? "+" : "", store_list_columns[i], n);
        }
        if (q->has_token) {
                a[n++] = SV_INT(q->token_id);
                LIST_ADD(" AND s.token_id = ?%d", n);
        }
        if (!isnan(q->since)) {
                a[n++] = SV_REAL(q->since);
                LIST_ADD(" AND s.created_at >= ?%d", n);
        }
        if (q->has_step) {
                a[n++] = SV_INT(q->step);
                LIST_ADD(list_step[pg], n);
        }
        if (q->label_v) {
                a[n++] = SV_STR(q->label_k);
                a[n++] = SV_STR(q->label_v);
                a[n++] = q->label_is_num ? SV_REAL(q->label_num) : SV_NULL;
                LIST_ADD(list_label[pg], n - 2, n - 1, n);
        }
        a[n++] = SV_INT(q->limit);
        LIST_ADD(" ORDER BY s.id DESC LIMIT ?%d", n);
        *ret_n = n;
        return used < cap ? 0 : -E2BIG;
}

/**
 * store_list_submissions() - a page of submissions, newest first
 * @store, @filters, @cursor, @limit: see store_list_query_parse() (store_backend.h)
 * @ret_items:       on success, a new array of store_get_submission()'s objects
 *                   (with "result" only when the filters ask include_result)
 * @ret_next_cursor: on success, the cursor of the next page, or 0 for the last
 * Return: 0, -EINVAL for a bad filter or limit, or a negative errno.
 */
int store_list_submissions(Store *store, json_t *filters, int64_t cursor, int limit, json_t **ret_items,
                           int64_t *ret_next_cursor)
{
        StoreListQuery q;
        StoreVal a[12];
        StoreRow row;
        char sql[1536];
        json_t *items;
        int64_t last = 0;
        int n = 0, count = 0;
        int r = store_list_query_parse(filters, cursor, limit, &q);

        if (r == 0)
                r = list_sql(&q, store->ops->pg, sql, sizeof(sql), a, &n);
        if (r < 0)
                return r;
        items = json_array();
        if (!items)
                return -ENOMEM;
        r = store->ops->query(store->be, -1, sql, a, n, &row);
        if (r < 0)
                goto out;
        while ((r = row.ops->step(&row)) > 0) {
                json_t *o = store_row_submission(&row, q.with_result);
                if (!o || json_array_append_new(items, o)) {
                        r = -ENOMEM;
                        break;
                }
                last = row.ops->i64(&row, 0);
                count++;
        }
        row.ops->done(&row);
        if (r == 0) {
                *ret_items = items;
                items = NULL;
                *ret_next_cursor = count == q.limit ? last : 0;
        }
out:
        json_decref(items);
        return r;
}

/* ---- stats -------------------------------------------------------------- */

/* Rows (key, n) of @q into @obj. */
static int counts_into(Store *s, int q, json_t *obj)
{
        StoreRow row;
        int r = s->ops->query(s->be, q, NULL, NULL, 0, &row);

        if (r < 0)
                return r;
        while ((r = row.ops->step(&row)) > 0) {
                const char *k = row.ops->text(&row, 0, NULL);
                if (k && json_object_set_new(obj, k, json_integer(row.ops->i64(&row, 1)))) {
                        r = -ENOMEM;
                        break;
                }
        }
        row.ops->done(&row);
        return r;
}

static json_t *real_or_null(const StoreRow *row, int col)
{
        return row->ops->is_null(row, col) ? json_null() : json_real(row->ops->real(row, col));
}

static json_t *text_or_null(const StoreRow *row, int col)
{
        const char *v = row->ops->text(row, col, NULL);
        return v ? json_string(v) : json_null();
}

/* task_stats' rows into @tasks, median_speedup null for now. */
static int stats_tasks(Store *s, json_t *tasks)
{
        StoreRow row;
        int r = s->ops->query(s->be, STORE_Q_STATS_TASKS, NULL, NULL, 0, &row);

        if (r < 0)
                return r;
        while ((r = row.ops->step(&row)) > 0) {
                json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:o, s:n}", "task", text_or_null(&row, 0),
                                      "submissions", (json_int_t)row.ops->i64(&row, 1),
                                      "done", (json_int_t)row.ops->i64(&row, 2),
                                      "correct", (json_int_t)row.ops->i64(&row, 3),
                                      "correct_rate", real_or_null(&row, 4), "median_speedup");
                if (!o || json_array_append_new(tasks, o)) {
                        r = -ENOMEM;
                        break;
                }
        }
        row.ops->done(&row);
        return r;
}

/*
 * Rows (task, bucket, cumulative n, total n) of the speedup histogram, in
 * order: the first bucket whose cumulative count reaches half the total
 * holds the (lower) median; report its geometric middle, 2^((bucket + 0.5) / 8).
 */
static int stats_medians(Store *s, json_t *tasks)
{
        StoreRow row;
        json_t *t;
        size_t i;
        int r = s->ops->query(s->be, STORE_Q_STATS_MEDIANS, NULL, NULL, 0, &row);

        if (r < 0)
                return r;
        while ((r = row.ops->step(&row)) > 0) {
                const char *task = row.ops->text(&row, 0, NULL);
                int64_t cum = row.ops->i64(&row, 2), total = row.ops->i64(&row, 3);

                if (!task || total <= 0 || 2 * cum < total)
                        continue;
                json_array_foreach(tasks, i, t) {
                        const char *name = json_string_value(json_object_get(t, "task")); /* NULL: no task ('') */
                        if (strcmp(name ? name : "", task) || !json_is_null(json_object_get(t, "median_speedup")))
                                continue;
                        if (json_object_set_new(t, "median_speedup",
                                                json_real(exp2(((double)row.ops->i64(&row, 1) + 0.5) / 8.0))))
                                r = -ENOMEM;
                }
                if (r < 0)
                        break;
        }
        row.ops->done(&row);
        return r;
}

/**
 * store_stats() - counts for /v1/stats
 * @store:     open store; borrowed
 * @ret_stats: on success, a new object:
 *   {"states": {state: n}, "verdicts": {verdict: n},
 *    "tasks": [{"task" (null for compile-only without a task), "submissions", "done", "correct",
 *               "correct_rate", "median_speedup"}]
 *    (median_speedup: of correct submissions, read from a histogram with 8
 *    buckets per doubling, so within ~5%; null when none),
 *    "compile_cache": {"entries", "hits", "misses", "bytes"}, "queue_depth": n (not done),
 *    "submissions": n (all ever accepted)}
 * Reads the trigger-kept aggregates (task_stats, task_speedups) and indexes;
 * never scans the history. On PostgreSQL, fleet-wide.
 * Return: 0 or a negative errno.
 */
int store_stats(Store *store, json_t **ret_stats)
{
        static const char *const counters[3] = { "cache_hits", "cache_misses", "cache_bytes" };
        json_t *states = json_object(), *verdicts = json_object(), *tasks = json_array(), *out = NULL;
        int64_t entries = 0, c[3] = { 0, 0, 0 }, depth = 0, total = 0;
        int r = states && verdicts && tasks ? 0 : -ENOMEM;

        if (r == 0)
                r = counts_into(store, STORE_Q_STATS_STATES, states);
        if (r == 0)
                r = counts_into(store, STORE_Q_STATS_VERDICTS, verdicts);
        if (r == 0)
                r = stats_tasks(store, tasks);
        if (r == 0)
                r = stats_medians(store, tasks);
        if (r == 0)
                r = store_db_scalar(store, STORE_Q_CACHE_ENTRIES, NULL, 0, &entries);
        for (int i = 0; r == 0 && i < 3; i++) {
                StoreVal a[] = { SV_STR(counters[i]) };
                r = store_db_scalar(store, STORE_Q_COUNTER, a, SV_N(a), &c[i]);
        }
        if (r == 0)
                r = store_db_scalar(store, STORE_Q_DEPTH, NULL, 0, &depth);
        if (r == 0)
                r = store_db_scalar(store, STORE_Q_SUBMITTED, NULL, 0, &total);
        if (r == 0) {
                out = json_pack("{s:O, s:O, s:O, s:{s:I, s:I, s:I, s:I}, s:I, s:I}", "states", states,
                                "verdicts", verdicts, "tasks", tasks, "compile_cache", "entries",
                                (json_int_t)entries, "hits", (json_int_t)c[0], "misses", (json_int_t)c[1],
                                "bytes", (json_int_t)c[2], "queue_depth", (json_int_t)depth, "submissions",
                                (json_int_t)total);
                r = out ? 0 : -ENOMEM;
        }
        json_decref(states);
        json_decref(verdicts);
        json_decref(tasks);
        if (r == 0)
                *ret_stats = out;
        return r;
}

/**
 * store_queue_depth() - jobs waiting for compile, waiting for a GPU, and running
 * @store: open store; borrowed
 * @ret_queued, @ret_compiled, @ret_running: on success, the counts (each may be NULL)
 * Return: 0 or a negative errno.
 */
int store_queue_depth(Store *store, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running)
{
        json_t *d = json_object();
        int r = d ? counts_into(store, STORE_Q_QUEUE_DEPTH, d) : -ENOMEM;

        if (r == 0) {
                if (ret_queued)
                        *ret_queued = json_integer_value(json_object_get(d, "queued"));
                if (ret_compiled)
                        *ret_compiled = json_integer_value(json_object_get(d, "compiled"));
                if (ret_running)
                        *ret_running = json_integer_value(json_object_get(d, "running"));
        }
        json_decref(d);
        return r;
}

/**
 * store_leases_of() - the jobs leased to @owner (compiling or running), by id, at most 1000
 * @store:      open store; borrowed
 * @owner:      the lease owner (store_lease_plan())
 * @ret_leases: on success, a new array of {"id": n, "state": "compiling"|"running"}
 * Return: 0 or a negative errno.
 *
 * For the dispatcher's check that it holds every job it renews: a claim
 * whose answer was lost (the connection cut after PostgreSQL committed it)
 * leaves a job leased to this process that nothing here will run.
 */
int store_leases_of(Store *store, const char *owner, json_t **ret_leases)
{
        StoreVal a[] = { SV_TEXT(owner) };
        json_t *list = json_array();
        StoreRow row;
        int r;

        if (!list)
                return -ENOMEM;
        r = store->ops->query(store->be, STORE_Q_LEASES_OF, NULL, a, SV_N(a), &row);
        if (r < 0)
                goto out;
        while ((r = row.ops->step(&row)) > 0) {
                const char *state = row.ops->text(&row, 1, NULL);
                if (json_array_append_new(list, json_pack("{sIss}", "id", (json_int_t)row.ops->i64(&row, 0),
                                                          "state", state ? state : "")) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        row.ops->done(&row);
        if (r == 0) {
                *ret_leases = list;
                list = NULL;
        }
out:
        json_decref(list);
        return r;
}

/* ---- views and dashboards ----------------------------------------------- */

/**
 * store_query_view() - read a dashboard view
 * @store:    open store; borrowed
 * @view:     the view's name: "v_" then [a-z0-9_], at most 64 bytes
 * @limit:    at most this many rows (1..LIMIT_LIST_PAGE_MAX)
 * @ret_rows: on success, a new array of objects, one per row, keyed by column
 * Return: 0, STORE_E_NOT_FOUND for an unknown view, -EINVAL for a bad name or
 * limit, or a negative errno.
 */
int store_query_view(Store *store, const char *view, int limit, json_t **ret_rows)
{
        StoreVal a[] = { SV_TEXT(view) };
        char sql[160];
        json_t *rows;
        int64_t found = 0;
        size_t len;
        int r;

        if (!view || strncmp(view, "v_", 2) || (len = strlen(view)) > 64 || limit < 1 || limit > LIMIT_LIST_PAGE_MAX)
                return -EINVAL;
        for (size_t i = 2; i < len; i++)
                if (!((view[i] >= 'a' && view[i] <= 'z') || (view[i] >= '0' && view[i] <= '9') || view[i] == '_'))
                        return -EINVAL;
        r = store_db_scalar(store, STORE_Q_VIEW_EXISTS, a, SV_N(a), &found);
        if (r < 0)
                return r;
        if (!found)
                return STORE_E_NOT_FOUND;
        rows = json_array();
        if (!rows)
                return -ENOMEM;
        snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\" LIMIT %d", view, limit);
        r = store_db_objects(store, -1, sql, NULL, 0, rows);
        if (r != 0) {
                json_decref(rows);
                return r;
        }
        *ret_rows = rows;
        return 0;
}

/**
 * store_dashboard_rows() - see store.h
 */
int store_dashboard_rows(Store *store, StoreDash q, json_t *args, json_t **ret_rows)
{
        StoreVal a[16];
        json_t *rows, *v;
        size_t i;
        int r;

        if ((unsigned)q >= STORE_DASH__COUNT || (args && !json_is_array(args)) || json_array_size(args) > 16)
                return -EINVAL;
        json_array_foreach(args, i, v) {
                if (json_is_integer(v))
                        a[i] = SV_INT(json_integer_value(v));
                else if (json_is_real(v))
                        a[i] = SV_REAL(json_real_value(v));
                else if (json_is_string(v))
                        a[i] = (StoreVal){ .type = STORE_VAL_TEXT, .p = json_string_value(v),
                                           .len = json_string_length(v) };
                else if (json_is_null(v))
                        a[i] = SV_NULL;
                else
                        return -EINVAL;
        }
        rows = json_array();
        if (!rows)
                return -ENOMEM;
        r = store_db_objects(store, STORE_Q_DASH_FIRST + (int)q, NULL, a, (int)json_array_size(args), rows);
        /* PostgreSQL finds an argument of the wrong type only when it runs the query. */
        if (store->ops->late_arg_errors && (r == -EIO || r == -EPROTO))
                r = -EINVAL;
        if (r < 0) {
                json_decref(rows);
                return r;
        }
        *ret_rows = rows;
        return 0;
}

/**
 * store_schema_version() - the number of the last migration applied
 * @store:       open store; borrowed
 * @ret_version: on success, the version (SQLite: PRAGMA user_version; PostgreSQL: kevald_schema)
 * Return: 0 or a negative errno.
 */
int store_schema_version(Store *store, int *ret_version)
{
        return store->ops->schema_version(store->be, ret_version);
}

/* ---- tokens, secret ----------------------------------------------------- */

/**
 * store_token_create() - add an API token
 * @store:  open store; borrowed
 * @name:   unique name (1..LIMIT_NAME_BYTES bytes)
 * @hash:   sha256 of the token text (the text itself is never stored)
 * @limits: JSON object of per-token limits, or NULL; borrowed
 * @ret_id: on success, the token's id (> 0; may be NULL)
 * Return: 0, STORE_E_CONFLICT when the name (or hash) exists, -EINVAL, or a negative errno.
 */
int store_token_create(Store *store, const char *name, const uint8_t hash[32], json_t *limits, int64_t *ret_id)
{
        StoreRow row;
        char *text = NULL;
        int64_t id = 0;
        int r;

        if (!name || !*name || strlen(name) > LIMIT_NAME_BYTES || !hash || (limits && !json_is_object(limits)))
                return -EINVAL;
        if (limits && !(text = json_dumps(limits, JSON_COMPACT)))
                return -ENOMEM;
        StoreVal a[] = { SV_STR(name), SV_BLOB(hash, 32), SV_REAL(store_now()), SV_TEXT(text) };
        r = store_tx_begin(store, STORE_TX_WRITE);
        if (r < 0)
                goto out;
        r = store_db_first(store, STORE_Q_TOKEN_CREATE, NULL, a, SV_N(a), &row);
        if (r > 0) {
                id = row.ops->i64(&row, 0);
                r = store_db_end(&row, 0);
        }
        r = store->ops->tx_end(store->be, r == -EEXIST ? STORE_E_CONFLICT : r);
        if (r == 0 && ret_id)
                *ret_id = id;
out:
        free(text);
        return r;
}

/**
 * store_token_revoke() - revoke a token by name (lookups fail from now on)
 * @store: open store; borrowed
 * @name:  the token's name
 * Return: 0, STORE_E_NOT_FOUND (no such token, or already revoked), or a negative errno.
 */
int store_token_revoke(Store *store, const char *name)
{
        int64_t n = 0;
        int r;

        if (!name)
                return -EINVAL;
        StoreVal a[] = { SV_STR(name), SV_REAL(store_now()) };
        r = store_tx_begin(store, STORE_TX_WRITE);
        if (r < 0)
                return r;
        r = store->ops->tx_end(store->be, store_db_exec(store, STORE_Q_TOKEN_REVOKE, a, SV_N(a), &n));
        return r == 0 && n == 0 ? STORE_E_NOT_FOUND : r;
}

/**
 * store_token_lookup() - find a live token by the hash of its text
 * @store:      open store; borrowed
 * @hash:       sha256 of the presented token
 * @ret_id:     on success, the token id
 * @ret_limits: on success, a new object with its limits ({} when none; may be NULL)
 * Return: 0, STORE_E_NOT_FOUND (unknown or revoked), -EBADMSG, or a negative errno.
 */
int store_token_lookup(Store *store, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits)
{
        StoreRow row;
        json_t *limits;
        int64_t id;
        int r;

        if (!hash)
                return -EINVAL;
        StoreVal a[] = { SV_BLOB(hash, 32) };
        r = store_db_first(store, STORE_Q_TOKEN_LOOKUP, NULL, a, SV_N(a), &row);
        if (r <= 0)
                return r < 0 ? r : STORE_E_NOT_FOUND;
        id = row.ops->i64(&row, 0);
        limits = row.ops->is_null(&row, 1) ? json_object() : store_row_json(&row, 1);
        r = store_db_end(&row, json_is_object(limits) ? 0 : -EBADMSG);
        if (r == 0) {
                if (ret_id)
                        *ret_id = id;
                if (ret_limits) {
                        *ret_limits = limits;
                        limits = NULL;
                }
        }
        json_decref(limits);
        return r;
}

/**
 * store_token_list() - every token, without hashes
 * @store:    open store; borrowed
 * @ret_list: on success, a new array of {"id", "name", "created_at", "revoked_at", "limits"}
 * Return: 0 or a negative errno.
 */
int store_token_list(Store *store, json_t **ret_list)
{
        json_t *list = json_array();
        StoreRow row;
        int r = list ? store->ops->query(store->be, STORE_Q_TOKEN_LIST, NULL, NULL, 0, &row) : -ENOMEM;

        if (r < 0) {
                json_decref(list);
                return r;
        }
        while ((r = row.ops->step(&row)) > 0) {
                json_t *o = store_row_token(&row);
                if (!o || json_array_append_new(list, o)) {
                        r = -ENOMEM;
                        break;
                }
        }
        row.ops->done(&row);
        if (r < 0) {
                json_decref(list);
                return r;
        }
        *ret_list = list;
        return 0;
}

/**
 * store_secret() - the server secret (32 random bytes made at first open; one for a whole fleet)
 * @store:      open store; borrowed
 * @ret_secret: on success, the secret
 * Return: 0, -EBADMSG when the stored value is missing or damaged, or a negative errno.
 */
int store_secret(Store *store, uint8_t ret_secret[32])
{
        StoreRow row;
        uint8_t *v = NULL;
        size_t len = 0;
        int r = store_db_first(store, STORE_Q_SECRET, NULL, NULL, 0, &row);

        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        r = store_db_end(&row, row.ops->blob(&row, 0, &v, &len));
        if (r == 0 && len != 32)
                r = -EBADMSG;
        if (r == 0)
                memcpy(ret_secret, v, 32);
        free(v);
        return r;
}

/**
 * store_secret_ensure() - make the server secret unless the store has one (at store_open())
 * @s: open store; borrowed
 * Return: 0 or a negative errno.
 */
int store_secret_ensure(Store *s)
{
        uint8_t secret[32];
        size_t got = 0;
        int r;

        while (got < sizeof(secret)) {
                ssize_t k = getrandom(secret + got, sizeof(secret) - got, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        log_error("store: getrandom failed: %s", strerror(errno));
                        return r;
                }
                got += (size_t)k;
        }
        StoreVal a[] = { SV_BLOB(secret, sizeof(secret)) };
        r = store_tx_begin(s, STORE_TX_WRITE);
        if (r == 0)
                r = s->ops->tx_end(s->be, store_db_exec(s, STORE_Q_SECRET_PUT, a, SV_N(a), NULL));
        return r;
}
