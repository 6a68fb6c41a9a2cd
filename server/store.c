/*
 * store - the front of the store: store.h is the contract, and this file
 * picks the backend for a path (a postgresql:// URI, or "postgresql:" for
 * the PG* environment: server/store_pg.c; anything else: a SQLite file,
 * server/store_sqlite.c) and forwards every call through that backend's
 * StoreOps table (store_backend.h). It also holds what
 * both backends share: time formatting, the idempotency id ranges, the
 * argument checks of an insert and of a list query, the StorePool, the
 * host identity of this process, and whether the storage can write
 * (store_write_fault(), fed by the write calls' results).
 *
 * A Store is one backend connection (be) and that backend's table (ops),
 * both fixed at store_open().
 */
#include "server/store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store_backend.h"

#define STORE_LIST_DEFAULT 100

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

const char *const store_list_columns[4] = { "task", "verdict", "state", "run_id" };

/* Set once at start-up, before any thread reads it. */
static char host_id[LIMIT_HOST_ID_BYTES + 1];

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

/* ---- shared helpers ------------------------------------------------------ */

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
int store_parse_time(const char *text, double *ret_t)
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
                if (store_parse_time(json_string_value(v), &q.since) < 0)
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
        return note_write(store->ops->insert_request(store->be, ins, ret_ids, ret_replayed), true);
}

int store_idempotent_lookup(Store *store, int64_t token_id, const char *idem_key,
                            const uint8_t body_hash[32], json_t **ret_ids)
{
        return store->ops->idempotent_lookup(store->be, token_id, idem_key, body_hash, ret_ids);
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

        if (!store->ops->claim_gate)
                return note_write(store->ops->claim_next(store->be, stage, owner, lease_s, ret_job), false);
        if (stage != STAGE_COMPILE && stage != STAGE_RUN)
                return -EINVAL;
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
        return note_write(store->ops->set_compiled(store->be, id, owner, compile_section), true);
}

int store_finish(Store *store, int64_t id, const char *owner, const char *verdict, double speedup,
                 json_t *result)
{
        return note_write(store->ops->finish(store->be, id, owner, verdict, speedup, result), true);
}

int store_requeue(Store *store, int64_t id, const char *owner, Stage stage)
{
        return note_write(store->ops->requeue(store->be, id, owner, stage), false);
}

int store_reap(Store *store, int max_attempts, int *ret_requeued, int *ret_failed)
{
        return store->ops->reap(store->be, max_attempts, ret_requeued, ret_failed);
}

int store_reap_collect(Store *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids,
                       size_t *ret_n_failed)
{
        return store->ops->reap_collect(store->be, max_attempts, ret_requeued, ret_failed_ids, ret_n_failed);
}

int store_requeue_all_leases(Store *store)
{
        return store->ops->requeue_all_leases(store->be);
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
        return store->ops->cache_get(store->be, key, ret_compile, ret_cubin, ret_cubin_len);
}

int store_cache_put(Store *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin,
                    size_t cubin_len)
{
        return note_write(store->ops->cache_put(store->be, key, compile, cubin, cubin_len), true);
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
