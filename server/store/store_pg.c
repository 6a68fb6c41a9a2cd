/*
 * store_pg - the store's PostgreSQL backend: one database shared by a fleet
 * of kevald hosts (store.h is the contract; the operations, written once,
 * call the primitives here through store_pg_ops at the end; docs/store.md,
 * "PostgreSQL").
 *
 * This is the only file that includes <libpq-fe.h>. SQLSTATEs are translated
 * into negative errnos here and logged here once with PostgreSQL's message;
 * a lost connection is -ENOTCONN, after which each call first tries to
 * re-establish it (PQreset, with a backoff from 100 ms to 5 s) so that the
 * server resumes by itself when the database returns.
 *
 * Theory of operation: every host runs the same statements (store_sql.def's,
 * each prepared once per connection) against the same tables
 * (migrations/pg/). Claims pick a row with FOR UPDATE SKIP LOCKED,
 * so concurrent claimers never wait on one another's row nor take the same
 * job; the lease owner is "host/worker" and every host's reaper returns
 * expired leases, so a dead host's jobs go back within lease_s plus one reap
 * period. Triggers send NOTIFY kevald_work (a job became claimable) and
 * kevald_done (payload: the id) and PostgreSQL delivers them at commit to
 * every connection that LISTENs (store_pg_listen()).
 *
 * Invariants: a transaction is open only inside one call (or between
 * store_begin_group() and its end); commits that acknowledge something to
 * a client (inserts, results, tokens) run at synchronous_commit=on, the
 * session default; claims, heartbeats and cache bookkeeping set it off for
 * their transaction (lost after a database crash, they are redone). The
 * aggregates (queue_counts, task_stats) are added to once per request by
 * the insert and taken from by triggers; the insert locks queue_counts rows
 * (-1 first, then the token's) before checking quotas, so quotas hold
 * across hosts.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "server/store/store_backend.h"

#define RESET_BACKOFF_MIN_MS 100
#define RESET_BACKOFF_MAX_MS 5000
#define MAX_PARAMS 16
#define INSERT_CHUNK 256                        /* rows per multi-row INSERT */

typedef struct StorePg StorePg;

struct StorePg {
        PGconn *conn;
        char *dsn_shown;        /* the DSN with its password elided, for messages */
        bool in_tx;             /* between tx_begin() and tx_end(): no reconnecting */
        bool listening;
        bool was_lost;          /* logged the loss; log the return once */
        double next_reset;      /* monotonic seconds: no PQreset before */
        int backoff_ms;
        bool prepared[STORE_Q__COUNT]; /* statement "k<q>" is prepared on this connection */
};

/* Text parameters of one statement; bytea ones go in binary format. */
typedef struct Params {
        const char *v[MAX_PARAMS];
        int len[MAX_PARAMS];
        int fmt[MAX_PARAMS];
        char buf[MAX_PARAMS][32];
        int n;
} Params;

static void p_text(Params *p, const char *v)
{
        p->v[p->n] = v;
        p->len[p->n] = 0;
        p->fmt[p->n] = 0;
        p->n++;
}

static void p_int(Params *p, int64_t v)
{
        snprintf(p->buf[p->n], sizeof(p->buf[0]), "%" PRId64, v);
        p_text(p, p->buf[p->n]);
}

static void p_double(Params *p, double v)
{
        snprintf(p->buf[p->n], sizeof(p->buf[0]), "%.17g", v);
        p_text(p, p->buf[p->n]);
}

static void p_bytes(Params *p, const void *v, size_t len)
{
        p->v[p->n] = v;
        p->len[p->n] = (int)len;
        p->fmt[p->n] = 1;
        p->n++;
}

static double mono_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- errors, connection ------------------------------------------------- */

static bool conn_lost(StorePg *s)
{
        return !s->conn || PQstatus(s->conn) != CONNECTION_OK;
}

/* A SQLSTATE (or a lost connection) as a negative errno, never 0. */
static int errno_from_result(StorePg *s, const PGresult *res)
{
        const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

        if (conn_lost(s) || !st)
                return conn_lost(s) ? -ENOTCONN : -EIO;
        if (!strncmp(st, "08", 2) || !strcmp(st, "57P01") || !strcmp(st, "57P02") || !strcmp(st, "57P03"))
                return -ENOTCONN;
        if (!strcmp(st, "23505"))
                return -EEXIST;
        if (!strcmp(st, "40001") || !strcmp(st, "40P01") || !strcmp(st, "55P03") || !strcmp(st, "57014"))
                return -EBUSY;
        if (!strcmp(st, "53100"))
                return -ENOSPC;
        if (!strcmp(st, "25006"))       /* read_only_sql_transaction: a standby, or default_transaction_read_only */
                return -EROFS;
        if (!strcmp(st, "53200"))
                return -ENOMEM;
        if (!strncmp(st, "22", 2))
                return -EINVAL;
        if (!strcmp(st, "53300"))       /* too_many_connections */
                return -EBUSY;
        if (!strncmp(st, "58", 2) || !strncmp(st, "XX", 2)) /* system error, internal error (data corrupted) */
                return -EIO;
        return -EPROTO;                 /* a bad statement or a bug: not the storage */
}

static void note_lost(StorePg *s)
{
        if (!s->was_lost) {
                log_error("store: lost the connection to PostgreSQL %s; reconnecting", s->dsn_shown);
                s->was_lost = true;
                s->backoff_ms = RESET_BACKOFF_MIN_MS;
                s->next_reset = 0;
        }
}

/* Re-establish a lost connection (at most once per backoff period). */
static int ensure_conn(StorePg *s)
{
        double now;

        if (!conn_lost(s))
                return 0;
        note_lost(s);
        now = mono_now();
        if (now < s->next_reset)
                return -ENOTCONN;
        PQreset(s->conn);
        if (conn_lost(s)) {
                s->next_reset = now + s->backoff_ms / 1000.0;
                s->backoff_ms = s->backoff_ms * 2 > RESET_BACKOFF_MAX_MS ? RESET_BACKOFF_MAX_MS : s->backoff_ms * 2;
                return -ENOTCONN;
        }
        s->was_lost = false;
        s->in_tx = false;
        memset(s->prepared, 0, sizeof(s->prepared)); /* a new session: nothing is prepared there */
        log_info("store: reconnected to PostgreSQL %s", s->dsn_shown);
        if (s->listening) {
                PGresult *res = PQexec(s->conn, "LISTEN kevald_work; LISTEN kevald_done");
                bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
                PQclear(res);
                if (!ok)
                        return -ENOTCONN;
        }
        return 0;
}

/* The outcome of @res (cleared here unless it succeeded and @ret_res takes it); failures logged once. */
static int result(StorePg *s, const char *what, PGresult *res, PGresult **ret_res)
{
        ExecStatusType st = PQresultStatus(res);
        int r;

        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
                if (ret_res)
                        *ret_res = res;
                else
                        PQclear(res);
                return 0;
        }
        r = errno_from_result(s, res);
        if (r == -ENOTCONN)
                note_lost(s);
        else if (r != -EEXIST)  /* a unique violation is an outcome the caller handles */
                log_error("store: %.80s failed: %s", what, res ? PQresultErrorMessage(res) : PQerrorMessage(s->conn));
        PQclear(res);
        return r;
}

/*
 * Run @sql with @p (NULL: none; then PQexec, which also takes several
 * statements); on success *@ret_res holds the result (PQclear()) or is not
 * set when @ret_res is NULL.
 */
static int run(StorePg *s, const char *what, const char *sql, const Params *p, PGresult **ret_res)
{
        if (conn_lost(s)) {
                note_lost(s);
                return -ENOTCONN;
        }
        return result(s, what, p ? PQexecParams(s->conn, sql, p->n, NULL, p->v, p->len, p->fmt, 0)
                                 : PQexec(s->conn, sql), ret_res);
}

/*
 * Statement @q of store_sql.def with @p: prepared once per connection (as
 * "k<q>") and executed by name afterwards, which saves the parse and the
 * planning (half of a claim's time).
 */
static int run_q(StorePg *s, int q, const Params *p, PGresult **ret_res)
{
        const char *text = store_sql_text(q, true);
        char name[16];

        if (!text)
                return -EINVAL; /* not a statement of this backend */
        if (conn_lost(s)) {
                note_lost(s);
                return -ENOTCONN;
        }
        snprintf(name, sizeof(name), "k%d", q);
        if (!s->prepared[q]) {
                char *sql = store_sql_render(text, true);
                int r = sql ? result(s, text, PQprepare(s->conn, name, sql, p->n, NULL), NULL) : -ENOMEM;

                free(sql);
                if (r < 0)
                        return r;
                s->prepared[q] = true;
        }
        return result(s, text, PQexecPrepared(s->conn, name, p->n, p->v, p->len, p->fmt, 0), ret_res);
}

static int exec_simple(StorePg *s, const char *what, const char *sql)
{
        return run(s, what, sql, NULL, NULL);
}

static int tx_begin(StorePg *s)
{
        int r;

        if (s->in_tx)
                return -EINVAL; /* one is open: a group's, which only inserts may join */
        r = ensure_conn(s);
        if (r == 0)
                r = exec_simple(s, "BEGIN", "BEGIN");
        s->in_tx = r == 0;
        return r;
}

/* Commit when @r is 0, else roll back. Returns @r or the commit's error. */
static int tx_end(StorePg *s, int r)
{
        s->in_tx = false;
        if (conn_lost(s))
                return r != 0 ? r : -ENOTCONN;
        if (r == 0)
                r = exec_simple(s, "COMMIT", "COMMIT");
        else
                exec_simple(s, "ROLLBACK", "ROLLBACK");
        return r;
}

/* BEGIN; STORE_TX_LAZY: with synchronous_commit off, for what may be redone after a database crash. */
static int store_pg_tx_begin(void *be, StoreTxKind kind)
{
        StorePg *s = be;
        int r = tx_begin(s);

        if (r == 0 && kind == STORE_TX_LAZY) {
                r = exec_simple(s, "set synchronous_commit", "SET LOCAL synchronous_commit = off");
                if (r < 0)
                        tx_end(s, r);
        }
        return r;
}

static int store_pg_tx_end(void *be, int r)
{
        return tx_end(be, r);
}

/* The open transaction is gone with the connection. */
static int store_pg_tx_lost(void *be)
{
        return conn_lost(be) ? -ENOTCONN : 0;
}

static int store_pg_exec(void *be, const char *sql)
{
        return exec_simple(be, sql, sql);
}

static int64_t get_i64(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* ---- primitives (StoreOps): statements and their rows --------------------- */

/* Outside a transaction a statement may first re-establish a lost connection. */
static int store_pg_query(void *be, int q, const char *sql, const StoreVal *args, int n, StoreRow *ret_row)
{
        StorePg *s = be;
        Params p = { .n = 0 };
        PGresult *res = NULL;
        int r = s->in_tx ? 0 : ensure_conn(s);

        if (n > MAX_PARAMS)
                return -EINVAL;
        for (int i = 0; r == 0 && i < n; i++) {
                const StoreVal *v = &args[i];
                if (v->type == STORE_VAL_INT)
                        p_int(&p, v->i);
                else if (v->type == STORE_VAL_REAL)
                        p_double(&p, v->d);
                else if (v->type == STORE_VAL_BLOB)
                        p_bytes(&p, v->len ? v->p : "", v->len);
                else
                        p_text(&p, v->type == STORE_VAL_TEXT ? v->p : NULL);
        }
        if (r == 0 && q >= 0) {
                r = run_q(s, q, &p, &res);
        } else if (r == 0) {
                char *text = store_sql_render(sql, true);
                r = text ? run(s, sql, text, &p, &res) : -ENOMEM;
                free(text);
        }
        if (r < 0)
                return r;
        *ret_row = (StoreRow){ .ops = &store_pg_ops, .be = s, .res = res, .q = q, .i = -1, .n = PQntuples(res) };
        return 0;
}

static int store_pg_step(StoreRow *row)
{
        return ++row->i < row->n ? 1 : 0;
}

static int64_t store_pg_changes(const StoreRow *row)
{
        return strtoll(PQcmdTuples(row->res), NULL, 10);
}

static void store_pg_done(StoreRow *row)
{
        PQclear(row->res);
        row->res = NULL;
}

static bool store_pg_is_null(const StoreRow *row, int col)
{
        return PQgetisnull(row->res, row->i, col);
}

static int64_t store_pg_i64(const StoreRow *row, int col)
{
        return get_i64(row->res, row->i, col);
}

static double store_pg_real(const StoreRow *row, int col)
{
        return strtod(PQgetvalue(row->res, row->i, col), NULL);
}

static const char *store_pg_text(const StoreRow *row, int col, size_t *ret_len)
{
        if (PQgetisnull(row->res, row->i, col))
                return NULL;
        if (ret_len)
                *ret_len = (size_t)PQgetlength(row->res, row->i, col);
        return PQgetvalue(row->res, row->i, col);
}

/* A bytea column (text format, hex) into a new buffer. */
static int store_pg_blob(const StoreRow *row, int col, uint8_t **ret, size_t *ret_len)
{
        size_t len = 0;
        unsigned char *raw;
        uint8_t *copy;

        *ret = NULL;
        *ret_len = 0;
        if (PQgetisnull(row->res, row->i, col))
                return 0;
        raw = PQunescapeBytea((const unsigned char *)PQgetvalue(row->res, row->i, col), &len);
        if (!raw)
                return -ENOMEM;
        copy = malloc(len ? len : 1);
        if (copy && len)
                memcpy(copy, raw, len);
        PQfreemem(raw);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        *ret_len = len;
        return 0;
}

/* Column types (pg_type OIDs) the dashboards return. */
enum { OID_BOOL = 16, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_FLOAT4 = 700, OID_FLOAT8 = 701,
       OID_NUMERIC = 1700 };

static json_t *store_pg_value(const StoreRow *row, int col)
{
        const char *v = PQgetvalue(row->res, row->i, col);

        if (PQgetisnull(row->res, row->i, col))
                return json_null();
        switch (PQftype(row->res, col)) {
        case OID_INT2:
        case OID_INT4:
        case OID_INT8:
                return json_integer(strtoll(v, NULL, 10));
        case OID_BOOL:
                return json_integer(v[0] == 't');
        case OID_NUMERIC: /* sum() of bigints: integral ones stay integers */
                return strpbrk(v, ".eEN") ? json_real(strtod(v, NULL)) : json_integer(strtoll(v, NULL, 10));
        case OID_FLOAT4:
        case OID_FLOAT8:
                return json_real(strtod(v, NULL));
        default:
                return json_stringn(v, (size_t)PQgetlength(row->res, row->i, col));
        }
}

static int store_pg_columns(const StoreRow *row)
{
        return PQnfields(row->res);
}

static const char *store_pg_column_name(const StoreRow *row, int col)
{
        return PQfname(row->res, col);
}

/* ---- open, migrations --------------------------------------------------- */

static int schema_version(StorePg *s, int *ret_v)
{
        PGresult *res;
        int r = run(s, "read the schema version", "SELECT coalesce(max(version), 0) FROM kevald_schema", NULL, &res);
        if (r < 0)
                return r;
        *ret_v = (int)get_i64(res, 0, 0);
        PQclear(res);
        return 0;
}

/*
 * Apply the migrations above the recorded version in one transaction under
 * an advisory lock, so that hosts starting at once migrate once.
 */
static int store_pg_migrate(void *be, const char *path)
{
        StorePg *s = be;
        int known = store_migrations_known(kevald_pg_migrations, kevald_pg_migrations_count), current = 0, r;

        if (known < 0)
                return known;
        r = tx_begin(s);
        if (r < 0)
                return r;
        /* Every host takes this lock first: one migrates, the others wait and find it done. */
        r = exec_simple(s, "take the migration lock", "SELECT pg_advisory_xact_lock(7738438426015588)");
        if (r == 0)
                r = exec_simple(s, "create kevald_schema",
                                "CREATE TABLE IF NOT EXISTS kevald_schema (version integer NOT NULL, "
                                "applied_at double precision NOT NULL)");
        if (r == 0)
                r = schema_version(s, &current);
        if (r < 0)
                goto out;
        if (current > known) {
                r = store_newer_db(s->dsn_shown, current, known);
                goto out;
        }
        for (unsigned long i = 0; i < kevald_pg_migrations_count; i++) {
                int v = store_migration_number(kevald_pg_migrations[i].name);
                char *sql;
                Params p = { .n = 0 };

                if (v <= current)
                        continue;
                log_info("store: applying migration pg/%s to %s", kevald_pg_migrations[i].name, s->dsn_shown);
                sql = strndup((const char *)kevald_pg_migrations[i].data, kevald_pg_migrations[i].len);
                if (!sql) {
                        r = -ENOMEM;
                        goto out;
                }
                /* PQexec: a migration file is several statements. */
                PGresult *res = PQexec(s->conn, sql);
                free(sql);
                if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
                        r = errno_from_result(s, res);
                        log_error("store: migration pg/%s failed: %s", kevald_pg_migrations[i].name,
                                  PQresultErrorMessage(res));
                        PQclear(res);
                        goto out;
                }
                PQclear(res);
                p_int(&p, v);
                p_double(&p, store_now());
                r = run(s, "record the migration", "INSERT INTO kevald_schema(version, applied_at) VALUES ($1, $2)",
                        &p, NULL);
                if (r < 0)
                        goto out;
        }
out:
        return tx_end(s, r);
}

/*
 * Connect with defaults that keep a fleet host responsive: a bounded connect
 * (a database host that drops packets would otherwise hold a reconnect for
 * minutes) and TCP keepalives (a listener idle in poll() learns of a dead
 * peer). Settings in the URI, or PG* variables, win: they are applied after.
 */
static PGconn *connect_dsn(const char *dsn)
{
        const char *keys[8], *vals[8];
        int n = 0;

        if (!getenv("PGCONNECT_TIMEOUT")) {
                keys[n] = "connect_timeout";
                vals[n++] = "10";
        }
        keys[n] = "keepalives_idle";
        vals[n++] = "10";
        keys[n] = "keepalives_interval";
        vals[n++] = "5";
        keys[n] = "keepalives_count";
        vals[n++] = "3";
        keys[n] = "dbname";                     /* expanded: the URI's own settings come after ours */
        vals[n++] = strcmp(dsn, "postgresql:") ? dsn : NULL;
        keys[n] = NULL;
        vals[n] = NULL;
        return PQconnectdbParams(keys, vals, 1);
}

/* Silence libpq's NOTICEs (e.g. "relation already exists, skipping"). */
static void quiet_notice(void *arg, const char *message)
{
}

/**
 * store_pg_close() - close the connection (an open transaction is rolled back)
 * @store: the store, or NULL
 */
static void store_pg_close(void *be)
{
        StorePg *store = be;

        if (!store)
                return;
        if (store->conn)
                PQfinish(store->conn);
        free(store->dsn_shown);
        free(store);
}

/**
 * store_pg_open() - connect and set the session up (store_open() migrates)
 * @dsn:       a libpq URI ("postgresql://user@host:port/db?..."), or
 *             "postgresql:" for the PG* environment
 * @ret_be:    on success, a new StorePg (store_pg_close())
 * Return: 0, -ENOTCONN when the server cannot be reached
 * or refuses the connection (logged with the DSN, password elided), or a
 * negative errno.
 */
static int store_pg_open(const char *dsn, void **ret_be)
{
        StorePg *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->dsn_shown = store_path_redacted(dsn);
        if (!s->dsn_shown) {
                r = -ENOMEM;
                goto out;
        }
        s->conn = connect_dsn(dsn);
        if (!s->conn) {
                r = -ENOMEM;
                goto out;
        }
        if (PQstatus(s->conn) != CONNECTION_OK) {
                const char *msg = PQerrorMessage(s->conn);
                log_error("store: cannot connect to PostgreSQL %s: %.*s", s->dsn_shown,
                          (int)strcspn(msg, "\n"), msg);
                r = -ENOTCONN;
                goto out;
        }
        PQsetNoticeProcessor(s->conn, quiet_notice, NULL);
        /* UTC, and text that never depends on the server's locale. */
        r = exec_simple(s, "set up the session", "SET TIME ZONE 'UTC'; SET client_min_messages = warning");
out:
        if (r == 0)
                *ret_be = s;
        else
                store_pg_close(s);
        return r;
}

/* ---- acceptance: many rows a statement, the insert's transaction ----------- */

/* A growing SQL text with its parameter arrays (multi-row inserts). */
typedef struct Batch {
        char *sql;
        size_t len, cap;
        const char **v;
        int *lens;
        int n, cap_v;
        char (*num)[32];
} Batch;

static int batch_init(Batch *b, int params)
{
        memset(b, 0, sizeof(*b));
        b->cap = 4096;
        b->sql = malloc(b->cap);
        b->v = calloc((size_t)params, sizeof(*b->v));
        b->lens = calloc((size_t)params, sizeof(*b->lens));
        b->num = calloc((size_t)params, sizeof(*b->num));
        b->cap_v = params;
        return b->sql && b->v && b->lens && b->num ? 0 : -ENOMEM;
}

static void batch_free(Batch *b)
{
        free(b->sql);
        free(b->v);
        free(b->lens);
        free(b->num);
}

static int batch_sql(Batch *b, const char *text)
{
        size_t n = strlen(text);
        if (b->len + n + 1 > b->cap) {
                size_t cap = (b->len + n + 1) * 2;
                char *sql = realloc(b->sql, cap);
                if (!sql)
                        return -ENOMEM;
                b->sql = sql;
                b->cap = cap;
        }
        memcpy(b->sql + b->len, text, n + 1);
        b->len += n;
        return 0;
}

/* Append "$k" for a new text parameter @v (NULL: SQL NULL). */
static int batch_param(Batch *b, const char *v)
{
        char ref[16];
        if (b->n >= b->cap_v)
                return -E2BIG;
        b->v[b->n] = v;
        b->n++;
        snprintf(ref, sizeof(ref), "$%d", b->n);
        return batch_sql(b, ref);
}

static int batch_int(Batch *b, int64_t v)
{
        snprintf(b->num[b->n], sizeof(b->num[0]), "%" PRId64, v);
        return batch_param(b, b->num[b->n]);
}

static int batch_run(StorePg *s, Batch *b, const char *what)
{
        PGresult *res = PQexecParams(s->conn, b->sql, b->n, NULL, b->v, NULL, NULL, 0);
        int r = 0;

        if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
                r = errno_from_result(s, res);
                if (r == -ENOTCONN)
                        note_lost(s);
                else
                        log_error("store: %s failed: %s", what, PQresultErrorMessage(res));
        }
        PQclear(res);
        return r;
}

/*
 * Append one row of values, "(" then each value as a new parameter followed
 * by its @after text (its cast, and what comes next: "::bigint, ", ...,
 * "::text)"); @first: the first row of the statement.
 */
static int batch_row(Batch *b, bool first, const StoreVal *v, const char *const *after, int n)
{
        int r = batch_sql(b, first ? "(" : ", (");

        for (int i = 0; r == 0 && i < n; i++) {
                r = v[i].type == STORE_VAL_INT ? batch_int(b, v[i].i) : batch_param(b, v[i].p);
                if (r == 0)
                        r = batch_sql(b, after[i]);
        }
        return r;
}

/* What follows each value of a submissions row and of a submission_requests row. */
static const char *const sub_casts[] = { "::bigint, 'queued', ", "::text, ", "::text, ", "::integer, ",
                                         "::bigint, ", "::text, ", "::double precision, ", "::text)" };
static const char *const req_casts[] = { "::bigint, ", "::text)" };

/* Insert @n submissions (ids already drawn) and their requests: a multi-row INSERT per chunk. */
static int insert_rows(StorePg *s, const StoreNew *subs, size_t n, const int64_t *ids, double now)
{
        char **tags = calloc(n, sizeof(*tags)), **reqs = calloc(n, sizeof(*reqs));
        char created[32];
        Batch b;
        int r = batch_init(&b, INSERT_CHUNK * 8);

        snprintf(created, sizeof(created), "%.17g", now);
        if (!tags || !reqs)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++) {
                json_t *t = json_object_get(subs[i].request, "tags");
                if (json_is_object(t) && !(tags[i] = json_dumps(t, JSON_COMPACT)))
                        r = -ENOMEM;
                if (r == 0 && !subs[i].request_json && !(reqs[i] = json_dumps(subs[i].request, JSON_COMPACT)))
                        r = -ENOMEM;
        }
        for (size_t base = 0; r == 0 && base < n; base += INSERT_CHUNK) {
                size_t end = base + INSERT_CHUNK < n ? base + INSERT_CHUNK : n;

                b.len = 0;
                b.n = 0;
                r = batch_sql(&b, "INSERT INTO submissions(id, state, task, mode, priority, token_id, run_id, "
                                  "created_at, tags) VALUES ");
                for (size_t i = base; r == 0 && i < end; i++) {
                        json_t *t = json_object_get(subs[i].request, "tags");
                        StoreVal v[] = { SV_INT(ids[i]), SV_TEXT(subs[i].task), SV_TEXT(subs[i].mode),
                                         SV_INT(subs[i].priority), SV_INT(subs[i].token_id),
                                         SV_TEXT(json_string_value(json_object_get(t, "run_id"))), SV_STR(created),
                                         SV_TEXT(tags[i]) };
                        r = batch_row(&b, i == base, v, sub_casts, SV_N(v));
                }
                if (r == 0)
                        r = batch_run(s, &b, "insert submissions");
                b.len = 0;
                b.n = 0;
                if (r == 0)
                        r = batch_sql(&b, "INSERT INTO submission_requests(id, request) VALUES ");
                for (size_t i = base; r == 0 && i < end; i++) {
                        StoreVal v[] = { SV_INT(ids[i]), SV_TEXT(subs[i].request_json ? subs[i].request_json : reqs[i]) };
                        r = batch_row(&b, i == base, v, req_casts, SV_N(v));
                }
                if (r == 0)
                        r = batch_run(s, &b, "insert requests");
        }
        for (size_t i = 0; i < n && tags && reqs; i++) {
                free(tags[i]);
                free(reqs[i]);
        }
        free(tags);
        free(reqs);
        batch_free(&b);
        return r;
}

/*
 * StoreOps.insert_rows: @n submissions and their requests, a multi-row
 * INSERT per chunk, their ids drawn from the sequence first, ascending
 * (consecutive unless another host draws at the same moment; the
 * idempotency record keeps ranges).
 */
static int store_pg_insert_rows(void *be, const StoreNew *subs, size_t n, int64_t *ids, double now)
{
        StorePg *s = be;
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, (int64_t)n);
        r = run_q(s, STORE_Q_DRAW_IDS, &p, &res);
        if (r < 0)
                return r;
        if ((size_t)PQntuples(res) != n) {
                PQclear(res);
                return -EIO;
        }
        for (size_t i = 0; i < n; i++)
                ids[i] = get_i64(res, (int)i, 0);
        PQclear(res);
        return insert_rows(s, subs, n, ids, now);
}

/* The last migration applied (kevald_schema). */
static int store_pg_schema_version(void *be, int *ret_version)
{
        StorePg *store = be;
        int r = ensure_conn(store);
        return r < 0 ? r : schema_version(store, ret_version);
}

/* ---- copy (store_copy()) -------------------------------------------------- */

/* Table and column names a copy may write: the names come from the schema, checked here again. */
static bool table_name_ok(const char *t)
{
        if (!*t || strlen(t) > 48)
                return false;
        for (; *t; t++)
                if (!((*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') || *t == '_'))
                        return false;
        return true;
}

/**
 * store_pg_copy_begin() - open the copy's transaction on an empty store
 * @store:    the target; borrowed
 * @tables:   the tables that will be copied, in order
 * @n_tables: their number
 * @force:    go on when the store already holds submissions or tokens
 *
 * Turns off the tables' own triggers for the transaction (the aggregates
 * and rollups are copied, not recomputed) and empties them (the rows the
 * migrations and the first open made: counters, the secret, ...).
 *
 * Return: 0 with the transaction open, STORE_E_CONFLICT when not empty and
 * !@force, -EINVAL, or a negative errno (nothing open then).
 */
static int store_pg_copy_begin(void *be, const char *const *tables, size_t n_tables, bool force)
{
        StorePg *store = be;
        PGresult *res;
        char sql[160];
        int64_t n = 0;
        int r = tx_begin(store);

        if (r < 0)
                return r;
        r = run(store, "count rows", "SELECT (SELECT count(*) FROM submissions) + (SELECT count(*) FROM tokens)",
                NULL, &res);
        if (r == 0) {
                n = get_i64(res, 0, 0);
                PQclear(res);
        }
        if (r == 0 && n > 0 && !force) {
                log_error("store: copy: %s already holds %" PRId64 " submissions and tokens; refusing "
                          "(--force replaces them)", store->dsn_shown, n);
                r = STORE_E_CONFLICT;
        }
        for (size_t i = 0; r == 0 && i < n_tables; i++) {
                if (!table_name_ok(tables[i])) {
                        r = -EINVAL;
                        break;
                }
                snprintf(sql, sizeof(sql), "ALTER TABLE \"%s\" DISABLE TRIGGER USER; DELETE FROM \"%s\"",
                         tables[i], tables[i]);
                r = exec_simple(store, "prepare the copy", sql);
        }
        return r != 0 ? tx_end(store, r) : 0;
}

/**
 * store_pg_copy_row() - insert one copied row, ids and all
 * @store: the target, between store_pg_copy_begin() and store_pg_copy_end()
 * @table: the table (one of those given to store_pg_copy_begin())
 * @n:     columns, at most 64
 * @names: their names (the source's; the same in both schemas)
 * @vals:  the values; bytes go as bytea, the rest as text PostgreSQL converts
 * Return: 0 or a negative errno.
 */
static int store_pg_copy_row(void *be, const char *table, int n, const char *const *names, const StoreVal *vals)
{
        StorePg *store = be;
        const char *v[64];
        int lens[64], fmts[64];
        char nums[64][32];
        char sql[2048];
        size_t len;
        PGresult *res;
        int r = 0;

        if (n < 1 || n > 64 || !table_name_ok(table))
                return -EINVAL;
        len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO \"%s\" (", table);
        for (int i = 0; i < n && len < sizeof(sql); i++) {
                if (!table_name_ok(names[i]))
                        return -EINVAL;
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s\"%s\"", i ? ", " : "", names[i]);
        }
        for (int i = 0; i < n && len < sizeof(sql); i++)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s$%d", i ? ", " : ") VALUES (", i + 1);
        if (len < sizeof(sql))
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, ")");
        if (len >= sizeof(sql))
                return -E2BIG;
        for (int i = 0; i < n; i++) {
                lens[i] = 0;
                fmts[i] = 0;
                switch (vals[i].type) {
                case STORE_VAL_NULL:
                        v[i] = NULL;
                        break;
                case STORE_VAL_INT:
                        snprintf(nums[i], sizeof(nums[i]), "%" PRId64, vals[i].i);
                        v[i] = nums[i];
                        break;
                case STORE_VAL_REAL:
                        /* SQLite's 9e999 (the +Inf bucket) is PostgreSQL's Infinity. */
                        snprintf(nums[i], sizeof(nums[i]), isinf(vals[i].d) ? (vals[i].d > 0 ? "Infinity" : "-Infinity")
                                                                           : "%.17g", vals[i].d);
                        v[i] = nums[i];
                        break;
                case STORE_VAL_TEXT:
                        v[i] = vals[i].p;
                        break;
                case STORE_VAL_BLOB:
                        v[i] = vals[i].len ? vals[i].p : "";
                        lens[i] = (int)vals[i].len;
                        fmts[i] = 1;
                        break;
                }
        }
        res = PQexecParams(store->conn, sql, n, NULL, v, lens, fmts, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                r = errno_from_result(store, res);
                log_error("store: copy into %s failed: %s", table, PQresultErrorMessage(res));
        }
        PQclear(res);
        return r;
}

/**
 * store_pg_copy_end() - finish the copy: commit when @r is 0, else roll back
 * @store:    the target
 * @tables:   as given to store_pg_copy_begin()
 * @n_tables: their number
 * @r:        the copy's outcome so far
 *
 * On success the identity sequences are moved past the copied ids (the next
 * submission, token or idempotency key gets a new one) and the triggers are
 * on again, in the same transaction.
 *
 * Return: @r, or the commit's error.
 */
static int store_pg_copy_end(void *be, const char *const *tables, size_t n_tables, int r)
{
        StorePg *store = be;

        static const char *const seqs[] = { "submissions", "tokens", "idempotency" };
        char sql[256];

        for (size_t i = 0; r == 0 && i < sizeof(seqs) / sizeof(seqs[0]); i++) {
                snprintf(sql, sizeof(sql), "SELECT setval(pg_get_serial_sequence('%s', 'id'), "
                         "coalesce((SELECT max(id) FROM %s), 0) + 1, false)", seqs[i], seqs[i]);
                r = exec_simple(store, "advance the sequence", sql);
        }
        for (size_t i = 0; r == 0 && i < n_tables; i++) {
                snprintf(sql, sizeof(sql), "ALTER TABLE \"%s\" ENABLE TRIGGER USER", tables[i]);
                r = exec_simple(store, "turn the triggers on", sql);
        }
        return tx_end(store, r);
}

/* ---- wake-ups ------------------------------------------------------------ */

/**
 * store_pg_listen() - LISTEN kevald_work and kevald_done on this connection
 * Return: 0, -ENOTCONN, or a negative errno.
 */
static int store_pg_listen(void *be)
{
        StorePg *store = be;
        int r = ensure_conn(store);
        if (r == 0)
                r = exec_simple(store, "listen", "LISTEN kevald_work; LISTEN kevald_done");
        if (r == 0)
                store->listening = true;
        return r;
}

/* One pending notification as an event: 0, or STORE_E_EMPTY when none is buffered. */
static int take_notify(StorePg *s, StoreEvent *ret_ev)
{
        PGnotify *n;

        while ((n = PQnotifies(s->conn))) {
                StoreEvent ev = { 0 };
                if (!strcmp(n->relname, "kevald_work")) {
                        ev.kind = STORE_EVENT_WORK;
                } else if (!strcmp(n->relname, "kevald_done")) {
                        char *end;
                        long long id = strtoll(n->extra, &end, 10);
                        if (end != n->extra && *end == '\0' && id > 0) {
                                ev.kind = STORE_EVENT_DONE;
                                ev.id = id;
                        }
                }
                PQfreemem(n);
                if (ev.kind) {
                        *ret_ev = ev;
                        return 0;
                }
        }
        return STORE_E_EMPTY;
}

/**
 * store_pg_next_event() - wait for one notification (see store_next_event())
 *
 * Waits in poll() on the connection's socket: no query is sent while idle.
 * After a lost connection comes back, LISTEN is renewed and one
 * STORE_EVENT_WORK is reported (jobs may have become claimable meanwhile).
 */
static int store_pg_next_event(void *be, int timeout_ms, StoreEvent *ret_ev)
{
        StorePg *store = be;
        struct pollfd pfd;
        int r;

        if (conn_lost(store)) {
                r = ensure_conn(store);
                if (r < 0) {
                        /* Wait out the backoff here rather than spin in the caller. */
                        poll(NULL, 0, timeout_ms < RESET_BACKOFF_MIN_MS ? timeout_ms : RESET_BACKOFF_MIN_MS);
                        return r;
                }
                ret_ev->kind = STORE_EVENT_WORK;
                ret_ev->id = 0;
                return 0;
        }
        if (!store->listening)
                return -EINVAL;
        if (take_notify(store, ret_ev) == 0)
                return 0;
        pfd.fd = PQsocket(store->conn);
        pfd.events = POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, timeout_ms);
        if (r < 0)
                return errno == EINTR ? STORE_E_EMPTY : -errno;
        if (r == 0)
                return STORE_E_EMPTY;
        /* A server going away sends its FATAL message, then closes: read both. */
        for (int reads = (pfd.revents & (POLLHUP | POLLERR)) ? 2 : 1; reads > 0; reads--)
                if (!PQconsumeInput(store->conn) || conn_lost(store)) {
                        note_lost(store);
                        return -ENOTCONN;
                }
        return take_notify(store, ret_ev);
}

/* The table store_open() picks for this backend (store_backend.h). */
const StoreOps store_pg_ops = {
        .name = "postgresql",
        .pg = true,
        .claim_gate = true,
        .shared = true,
        .late_arg_errors = true,
        STORE_OPS_EVERY(store_pg),
        .insert_rows = store_pg_insert_rows,
        .listen = store_pg_listen,
        .next_event = store_pg_next_event,
        .copy_begin = store_pg_copy_begin,
        .copy_row = store_pg_copy_row,
        .copy_end = store_pg_copy_end,
};
