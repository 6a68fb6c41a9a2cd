/*
 * store_rules - what the store's operations and both backends follow alike,
 * written once: time formatting and parsing, the idempotency id ranges, the
 * argument checks of an insert, of a finish and of a list query, the host
 * identity, the paths that name PostgreSQL, migration numbering; running a
 * statement through a backend's primitives (store_db_*()), and how a row
 * becomes the API's submission and token objects (through a StoreRow, the
 * backend's cursor). It names no backend: the backends, the front and the
 * operations depend on it, never the other way round (store_backend.h).
 */
#include "server/store/store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"
#include "server/store/store_test.h"

#define STORE_LIST_DEFAULT 100

const char *const store_list_columns[4] = { "task", "verdict", "state", "run_id" };

/* Set once at start-up, before any thread reads it. */
static char host_id[LIMIT_HOST_ID_BYTES + 1];

/* ---- paths, host identity ------------------------------------------------ */

/**
 * store_path_is_pg() - whether @path names a PostgreSQL database
 * @path: a --db value
 * Return: true for "postgresql://...", "postgres://..." and "postgresql:"
 * (the PG* environment), false for anything else (a SQLite file).
 */
bool store_path_is_pg(const char *path)
{
        return path && (!strncmp(path, "postgresql://", 13) || !strncmp(path, "postgres://", 11) ||
                        !strcmp(path, "postgresql:"));
}

/**
 * store_path_redacted() - @path for messages, any URI password replaced by "***"
 * @path: a --db value
 * Return: a new string (free()), or NULL when out of memory.
 */
char *store_path_redacted(const char *path)
{
        const char *scheme, *at, *colon, *slash;
        char *out;

        if (!store_path_is_pg(path) || !(scheme = strstr(path, "://")))
                return strdup(path ? path : "");
        scheme += 3;
        slash = strchr(scheme, '/');
        at = strchr(scheme, '@');
        if (!at || (slash && at > slash))
                at = NULL;
        colon = at ? memchr(scheme, ':', (size_t)(at - scheme)) : NULL;
        if (!colon)
                out = strdup(path);
        else if (asprintf(&out, "%.*s:***%s", (int)(colon - path), path, at) < 0)
                out = NULL;
        /* A password given as ?password=... is hidden too. */
        char *pw = out ? strstr(out, "password=") : NULL;
        if (pw) {
                char *end = pw + 9 + strcspn(pw + 9, "&");
                memmove(pw + 9 + 3, end, strlen(end) + 1);
                memcpy(pw + 9, "***", 3);
        }
        return out;
}

/**
 * store_set_host_id() - set the host id recorded on leases and in the hosts table
 * @id: 1..LIMIT_HOST_ID_BYTES bytes of [A-Za-z0-9._-]; copied
 * Return: 0 or -EINVAL.
 */
int store_set_host_id(const char *id)
{
        size_t n = id ? strlen(id) : 0;

        if (n == 0 || n > LIMIT_HOST_ID_BYTES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)id[i]) && id[i] != '.' && id[i] != '_' && id[i] != '-')
                        return -EINVAL;
        memcpy(host_id, id, n + 1);
        return 0;
}

/**
 * store_host_id() - this process's host id: what store_set_host_id() set, else
 * the hostname (characters outside [A-Za-z0-9._-] become '-'), else "localhost"
 * Return: a static string.
 */
const char *store_host_id(void)
{
        if (!host_id[0]) {
                char name[256] = "";
                size_t n;

                if (gethostname(name, sizeof(name) - 1) < 0 || !name[0])
                        snprintf(name, sizeof(name), "localhost");
                n = strnlen(name, LIMIT_HOST_ID_BYTES);
                for (size_t i = 0; i < n; i++)
                        if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '_')
                                name[i] = '-';
                memcpy(host_id, name, n);
                host_id[n] = '\0';
        }
        return host_id;
}

/* "HOST/kevald-PID" fits, whatever the host id and the pid. */
_Static_assert(LIMIT_HOST_ID_BYTES + sizeof("/kevald-") + sizeof("-2147483648") <= STORE_LEASE_OWNER_BYTES,
               "a lease owner does not fit STORE_LEASE_OWNER_BYTES");

/**
 * store_lease_plan() - how this process holds its leases: their owner, and how often they are renewed
 * @lease_s:     the lease length (> 0): a claim or a renewal holds the job until now + @lease_s
 * @ret_owner:   on success, the owner this process's leases carry, "HOST/kevald-PID":
 *               store_host_id() first, so that a restarted host takes back only its
 *               own leases (store_requeue_all_leases())
 * @ret_renew_s: on success, the seconds between renewals (store_heartbeat_owner() with
 *               @lease_s): @lease_s / 3, so a lease outlives two missed renewals
 *
 * The dispatcher claims under this owner and renews on its loop; storewatch
 * renews the same leases from its thread, so that a dispatcher held up in a
 * slow store call keeps them. Both take the owner and the interval from here.
 *
 * Return: 0, or -EINVAL when @lease_s is not > 0.
 */
int store_lease_plan(double lease_s, char ret_owner[STORE_LEASE_OWNER_BYTES], double *ret_renew_s)
{
        if (!(lease_s > 0) || !ret_owner || !ret_renew_s)
                return -EINVAL;
        snprintf(ret_owner, STORE_LEASE_OWNER_BYTES, "%s/kevald-%d", store_host_id(), (int)getpid());
        *ret_renew_s = lease_s / 3;
        return 0;
}

/* ---- time, jobs, ids, argument checks ------------------------------------ */

/**
 * store_now() - the current time as REAL unix seconds
 * Return: seconds since the epoch (CLOCK_REALTIME), with sub-second part.
 */
double store_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * store_format_time() - format unix seconds as RFC 3339 UTC, truncated to milliseconds
 * @t:       unix seconds
 * @ret_buf: receives e.g. "2026-11-21T14:02:30.123Z" (NUL-terminated)
 */
void store_format_time(double t, char ret_buf[32])
{
        struct tm tm;
        double whole = floor(t);
        time_t secs = (time_t)whole;
        int ms = (int)floor((t - whole) * 1000.0);   /* truncate: since=<created_at> includes the row */

        if (ms >= 1000) {
                secs++;
                ms -= 1000;
        }
        char tmp[128];
        size_t len;

        if (!gmtime_r(&secs, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
                snprintf(ret_buf, 32, "%s", "invalid-time");
                return;
        }
        len = (size_t)snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                               tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        if (len > 31)
                len = 31;
        memcpy(ret_buf, tmp, len);
        ret_buf[len] = '\0';
}

/* RFC 3339 ("2026-11-21T14:02:30Z", fraction and offset optional) or unix seconds as text. */
static int parse_time(const char *text, double *ret_t)
{
        int y, mo, d, h, mi, n = 0;
        double sec;
        char *end;
        double v = strtod(text, &end);

        if (end != text && *end == '\0' && isfinite(v)) {
                *ret_t = v;
                return 0;
        }
        if (sscanf(text, "%4d-%2d-%2d%*[Tt ]%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0)
                return -EINVAL;
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61)
                return -EINVAL;
        struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi };
        double t = (double)timegm(&tm) + sec;
        const char *z = text + n;
        if (*z == 'Z' || *z == 'z') {
                z++;
        } else if (*z == '+' || *z == '-') {
                int oh, om, m = 0;
                if (sscanf(z + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5)
                        return -EINVAL;
                double off = oh * 3600.0 + om * 60.0;
                t += *z == '+' ? -off : off;
                z += 6;
        } else {
                return -EINVAL;
        }
        if (*z)
                return -EINVAL;
        *ret_t = t;
        return 0;
}

/**
 * store_job_free() - free a StoreJob and drop its JSON references
 * @job: the job, or NULL
 */
void store_job_free(StoreJob *job)
{
        if (!job)
                return;
        free(job->task);
        free(job->mode);
        json_decref(job->request);
        json_decref(job->compile);
        free(job);
}

/* ids as a JSON list of [first, last] ranges: consecutive ids (the usual case) take one pair. */
char *store_ids_encode(const int64_t *ids, size_t n)
{
        json_t *ranges = json_array();
        char *text = NULL;

        if (!ranges)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t j = i;
                while (j + 1 < n && ids[j + 1] == ids[j] + 1)
                        j++;
                if (json_array_append_new(ranges, json_pack("[II]", (json_int_t)ids[i], (json_int_t)ids[j])))
                        goto out;
                i = j + 1;
        }
        text = json_dumps(ranges, JSON_COMPACT);
out:
        json_decref(ranges);
        return text;
}

/* Expand ranges into a new array of ids (bounded by @max). */
int store_ids_decode(const char *text, size_t max, int64_t **ret_ids, size_t *ret_n)
{
        json_t *ranges = json_loads(text, 0, NULL), *pair;
        int64_t *ids = NULL;
        size_t n = 0, i;
        int r = -EBADMSG;

        if (!json_is_array(ranges))
                goto out;
        ids = malloc(sizeof(*ids) * (max ? max : 1));
        if (!ids) {
                r = -ENOMEM;
                goto out;
        }
        json_array_foreach(ranges, i, pair) {
                json_int_t a = json_integer_value(json_array_get(pair, 0));
                json_int_t b = json_integer_value(json_array_get(pair, 1));
                if (a <= 0 || b < a)
                        goto out;
                for (json_int_t v = a; v <= b; v++) {
                        if (n >= max)
                                goto out;
                        ids[n++] = v;
                }
        }
        *ret_ids = ids;
        *ret_n = n;
        ids = NULL;
        r = 0;
out:
        free(ids);
        json_decref(ranges);
        return r;
}

int store_check_insert(const StoreInsert *ins)
{
        if (!ins || !ins->subs || ins->n == 0 || ins->n > LIMIT_BATCH_MAX)
                return -EINVAL;
        if (ins->idem_key && (!ins->body_hash || strlen(ins->idem_key) == 0 ||
                              strlen(ins->idem_key) > LIMIT_IDEMPOTENCY_KEY_BYTES))
                return -EINVAL;
        if (ins->max_queued_total < 0 || ins->max_queued_token < 0)
                return -EINVAL;
        for (size_t i = 0; i < ins->n; i++) {
                const StoreNew *sn = &ins->subs[i];
                if (!sn->request || !sn->mode || (strcmp(sn->mode, "full") && strcmp(sn->mode, "compile")))
                        return -EINVAL;
                if (sn->token_id != ins->subs[0].token_id || sn->token_id < 0)
                        return -EINVAL;
                if (sn->verdict && (strcmp(sn->verdict, "rejected") != 0 || !json_is_object(sn->result)))
                        return -EINVAL;
        }
        return 0;
}

int64_t store_insert_queued(const StoreInsert *ins)
{
        int64_t n = 0;

        for (size_t i = 0; i < ins->n; i++)
                n += ins->subs[i].verdict == NULL;
        return n;
}

json_t *store_internal_error_result(const char *task, const char *state, int attempts)
{
        char msg[160];
        snprintf(msg, sizeof(msg), "the %s stage lost its worker %d time%s (lease expired); giving up",
                 strcmp(state, "running") ? "compile" : "run", attempts, attempts == 1 ? "" : "s");
        return json_pack("{s:s, s:s?, s:{s:s, s:s}, s:s}", "verdict", "internal_error", "task", task,
                         "error", "kind", "internal", "message", msg,
                         "feedback", "Internal error in the evaluation service; not the kernel's fault.");
}

/* A filter value that must be a string (@name absent: NULL, 0). */
static int filter_string(json_t *filters, const char *name, const char **ret)
{
        json_t *v = json_object_get(filters, name);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > LIMIT_TAG_STRING_BYTES)
                return -EINVAL;
        *ret = json_string_value(v);
        return 0;
}

/**
 * store_list_query_parse() - check and parse the arguments of store_list_submissions()
 * @filters: object or NULL; borrowed (@ret_q points into it). Optional keys:
 *           "task", "verdict", "state", "run_id" (strings), "token_id"
 *           (integer), "since" (RFC 3339 string, or unix seconds as number or
 *           string: created at or after), "label" ("k=v": tags.labels.k ==
 *           "v"). Other keys are refused so that a typo does not silently
 *           list everything.
 * @cursor:  0 for the first page, else the previous page's next cursor (ids below it)
 * @limit:   1..LIMIT_LIST_PAGE_MAX, or 0 for the default (100)
 * @ret_q:   on success, the parsed query
 * Return: 0 or -EINVAL.
 */
int store_list_query_parse(json_t *filters, int64_t cursor, int limit, StoreListQuery *ret_q)
{
        static const char *const known[] = { "task", "verdict", "state", "run_id", "token_id", "since", "label",
                                             "step", "include_result" };
        StoreListQuery q = { .since = NAN, .cursor = cursor, .limit = limit };
        const char *label = NULL, *key;
        json_t *v, *tok;

        if (q.limit == 0)
                q.limit = STORE_LIST_DEFAULT;
        if (q.limit < 0 || q.limit > LIMIT_LIST_PAGE_MAX || cursor < 0)
                return -EINVAL;
        if (filters && !json_is_object(filters))
                return -EINVAL;
        json_object_foreach(filters, key, v) {
                bool ok = false;
                for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                        ok = ok || strcmp(key, known[i]) == 0;
                if (!ok)
                        return -EINVAL;
        }
        for (int i = 0; i < 4; i++)
                if (filter_string(filters, store_list_columns[i], &q.strs[i]) < 0)
                        return -EINVAL;
        tok = json_object_get(filters, "token_id");
        if (tok && !json_is_null(tok)) {
                if (!json_is_integer(tok) || json_integer_value(tok) < 0)
                        return -EINVAL;
                q.has_token = true;
                q.token_id = json_integer_value(tok);
        }
        v = json_object_get(filters, "since");
        if (json_is_number(v)) {
                q.since = json_number_value(v);
        } else if (json_is_string(v)) {
                if (parse_time(json_string_value(v), &q.since) < 0)
                        return -EINVAL;
        } else if (v && !json_is_null(v)) {
                return -EINVAL;
        }
        v = json_object_get(filters, "step");
        if (v && !json_is_null(v)) {
                if (!json_is_integer(v) || json_integer_value(v) < 0)
                        return -EINVAL;
                q.has_step = true;
                q.step = json_integer_value(v);
        }
        v = json_object_get(filters, "include_result");
        if (v && !json_is_boolean(v))
                return -EINVAL;
        q.with_result = json_is_true(v);
        if (filter_string(filters, "label", &label) < 0)
                return -EINVAL;
        if (label) {
                const char *eq = strchr(label, '=');
                if (!eq || eq == label)
                        return -EINVAL;
                char *end;

                snprintf(q.label_k, sizeof(q.label_k), "%.*s", (int)(eq - label), label);
                q.label_v = eq + 1;
                q.label_num = strtod(q.label_v, &end);
                q.label_is_num = end != q.label_v && !*end && isfinite(q.label_num);
        }
        *ret_q = q;
        return 0;
}

/* ---- migrations ----------------------------------------------------------- */

/**
 * store_migration_number() - the number a migration file's name starts with
 * @name: e.g. "006_dashboard.sql"
 * Return: 1..100000, or -1 when @name does not start with digits and '_'.
 */
int store_migration_number(const char *name)
{
        char *end;
        long v = strtol(name, &end, 10);
        if (end == name || *end != '_' || v <= 0 || v > 100000)
                return -1;
        return (int)v;
}

/**
 * store_migrations_known() - the schema version a binary's migrations reach
 * @m: the embedded files, in order; @n: their number
 * Return: the last file's number (0 for none), or -EINVAL (logged) when the
 * numbers do not rise.
 */
int store_migrations_known(const StoreMigration *m, unsigned long n)
{
        int known = 0;

        for (unsigned long i = 0; i < n; i++) {
                int v = store_migration_number(m[i].name);
                if (v <= known) {
                        log_error("store: migration \"%s\" is misnumbered", m[i].name);
                        return -EINVAL;
                }
                known = v;
        }
        return known;
}

/**
 * store_newer_db() - refuse a database whose schema is newer than this binary (logged)
 * @shown: the database, as messages show it; @current, @known: the versions
 * Return: STORE_E_NEWER_DB.
 */
int store_newer_db(const char *shown, int current, int known)
{
        log_error("store: database %s has schema version %d, newer than this kevald knows (%d); "
                  "refusing to open it: upgrade kevald", shown, current, known);
        return STORE_E_NEWER_DB;
}

/**
 * store_check_finish() - the arguments of store_finish(), checked
 * @verdict: non-empty; @result: the result object; borrowed
 * @ret_text: on success, @result as compact JSON (free())
 * Return: 0, -EINVAL, or -ENOMEM.
 */
int store_check_finish(const char *verdict, json_t *result, char **ret_text)
{
        if (!verdict || !*verdict || !result)
                return -EINVAL;
        *ret_text = json_dumps(result, JSON_COMPACT);
        return *ret_text ? 0 : -ENOMEM;
}

/* ---- rows into API objects ------------------------------------------------ */

/**
 * store_row_json() - a column's text parsed as JSON
 * Return: a new reference, or NULL for SQL NULL, text that is not JSON, or
 * no memory.
 */
json_t *store_row_json(const StoreRow *row, int col)
{
        size_t len;
        const char *v = row->ops->text(row, col, &len);
        return v ? json_loadb(v, len, JSON_DECODE_ANY, NULL) : NULL;
}

/* A REAL unix-seconds column as an RFC 3339 string, or JSON null. */
static json_t *row_time(const StoreRow *row, int col)
{
        char buf[32];
        if (row->ops->is_null(row, col))
                return json_null();
        store_format_time(row->ops->real(row, col), buf);
        return json_string(buf);
}

static json_t *row_real_or_null(const StoreRow *row, int col)
{
        return row->ops->is_null(row, col) ? json_null() : json_real(row->ops->real(row, col));
}

static json_t *row_text_or_null(const StoreRow *row, int col)
{
        const char *v = row->ops->text(row, col, NULL);
        return v ? json_string(v) : json_null();
}

/**
 * store_row_submission() - one submission as the API shows it
 * @row: columns id, state, verdict, task, mode, priority, created_at,
 *       started_at, finished_at, attempts, speedup, tags, result (the result
 *       may be NULL: not done, or not joined)
 * @with_result: add "result" when the row has one
 * Return: a new object, or NULL (no memory, or a stored result that is not JSON).
 */
json_t *store_row_submission(const StoreRow *row, bool with_result)
{
        json_t *tags = store_row_json(row, 11);
        json_t *o = json_pack("{s:I, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:i, s:o, s:o}",
                              "id", (json_int_t)row->ops->i64(row, 0),
                              "state", row_text_or_null(row, 1),
                              "verdict", row_text_or_null(row, 2),
                              "task", row_text_or_null(row, 3),
                              "mode", row_text_or_null(row, 4),
                              "priority", row->ops->i64(row, 5) > 0 ? "interactive" : "bulk",
                              "created_at", row_time(row, 6),
                              "started_at", row_time(row, 7),
                              "finished_at", row_time(row, 8),
                              "attempts", (int)row->ops->i64(row, 9),
                              "speedup", row_real_or_null(row, 10),
                              "tags", json_is_object(tags) ? json_incref(tags) : json_object());
        json_decref(tags);
        if (o && with_result && !row->ops->is_null(row, 12)) {
                json_t *res = store_row_json(row, 12);
                if (!res || json_object_set_new(o, "result", res)) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

/**
 * store_row_token() - one token as `kevald token list` shows it
 * @row: columns id, name, created_at, revoked_at, limits
 * Return: a new object, or NULL when out of memory.
 */
json_t *store_row_token(const StoreRow *row)
{
        json_t *limits = store_row_json(row, 4);
        json_t *o = json_pack("{s:I, s:o, s:o, s:o, s:o}", "id", (json_int_t)row->ops->i64(row, 0),
                              "name", row_text_or_null(row, 1), "created_at", row_time(row, 2),
                              "revoked_at", row_time(row, 3),
                              "limits", json_is_object(limits) ? json_incref(limits) : json_object());
        json_decref(limits);
        return o;
}

/* ---- running statements through the primitives ---------------------------- */

/**
 * store_db_first() - run a statement and step to its first row
 * @s:       open store; borrowed
 * @q:       a StoreQuery, or -1 for @sql
 * @sql:     with @q -1, the text (?N arguments) to run once
 * @args:    its arguments, @n of them; borrowed
 * @ret_row: on 1, the statement on its first row: store_db_end() it
 * Return: 1 (a row), 0 (none; nothing left to end), or a negative errno.
 */
int store_db_first(Store *s, int q, const char *sql, const StoreVal *args, int n, StoreRow *ret_row)
{
        int r = s->ops->query(s->be, q, sql, args, n, ret_row);

        if (r < 0)
                return r;
        r = s->ops->step(ret_row);
        if (r <= 0)
                s->ops->done(ret_row);
        return r;
}

/**
 * store_db_end() - run the rest of @row's statement and end it
 * @row: a statement from store_db_first() (a write with RETURNING runs to its end)
 * @r:   the caller's outcome so far
 * Return: @r, or the statement's failure when @r is 0.
 */
int store_db_end(StoreRow *row, int r)
{
        int r2;

        while ((r2 = row->ops->step(row)) > 0)
                ;
        row->ops->done(row);
        return r == 0 && r2 < 0 ? r2 : r;
}

/**
 * store_db_exec() - run statement @q to its end
 * @s, @q, @args, @n: as store_db_first()
 * @ret_changes: on success, the rows it wrote (may be NULL)
 * Return: 0 or a negative errno (-EEXIST for a unique violation).
 */
int store_db_exec(Store *s, int q, const StoreVal *args, int n, int64_t *ret_changes)
{
        StoreRow row;
        int r = s->ops->query(s->be, q, NULL, args, n, &row);

        if (r < 0)
                return r;
        while ((r = s->ops->step(&row)) > 0)
                ;
        if (r == 0 && ret_changes)
                *ret_changes = s->ops->changes(&row);
        s->ops->done(&row);
        return r;
}

/**
 * store_db_has() - whether @s's backend has statement @q (store_sql.def: a NULL dialect has not)
 */
bool store_db_has(Store *s, int q)
{
        return store_sql_text(q, s->ops->pg) != NULL;
}

/**
 * store_db_scalar() - the first column of statement @q's first row
 * @ret: on success, the value (0 when there is no row, or it is NULL)
 * Return: 0 or a negative errno.
 */
int store_db_scalar(Store *s, int q, const StoreVal *args, int n, int64_t *ret)
{
        StoreRow row;
        int r = store_db_first(s, q, NULL, args, n, &row);

        if (r < 0)
                return r;
        *ret = r > 0 ? row.ops->i64(&row, 0) : 0;
        return r > 0 ? store_db_end(&row, 0) : 0;
}

/**
 * store_db_objects() - every row of a statement as an object keyed by column name
 * @s, @q, @sql, @args, @n: as store_db_first()
 * @rows: the array the objects are appended to; borrowed
 * Return: 0 or a negative errno.
 */
int store_db_objects(Store *s, int q, const char *sql, const StoreVal *args, int n, json_t *rows)
{
        StoreRow row;
        int r = s->ops->query(s->be, q, sql, args, n, &row);

        if (r < 0)
                return r;
        while ((r = s->ops->step(&row)) > 0) {
                json_t *o = json_object();
                int cols = s->ops->columns(&row);

                for (int c = 0; o && c < cols; c++)
                        if (json_object_set_new(o, s->ops->column_name(&row, c), s->ops->value(&row, c))) {
                                json_decref(o);
                                o = NULL;
                        }
                if (!o || json_array_append_new(rows, o)) {
                        r = -ENOMEM;
                        break;
                }
        }
        s->ops->done(&row);
        return r;
}
