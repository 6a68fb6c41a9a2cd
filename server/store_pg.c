/*
 * store_pg - the store's PostgreSQL backend: one database shared by a fleet
 * of kevald hosts (store.h is the contract; server/store.c calls here through
 * store_pg_ops at the end; docs/store.md, "PostgreSQL").
 *
 * This is the only file that includes <libpq-fe.h>. SQLSTATEs are translated
 * into negative errnos here and logged here once with PostgreSQL's message;
 * a lost connection is -ENOTCONN, after which each call first tries to
 * re-establish it (PQreset, with a backoff from 100 ms to 5 s) so that the
 * server resumes by itself when the database returns.
 *
 * Theory of operation: every host runs the same statements against the same
 * tables (migrations/pg/). Claims pick a row with FOR UPDATE SKIP LOCKED,
 * so concurrent claimers never wait on one another's row nor take the same
 * job; the lease owner is "host/worker" and every host's reaper returns
 * expired leases, so a dead host's jobs go back within lease_s plus one reap
 * period. Triggers send NOTIFY kevald_work (a job became claimable) and
 * kevald_done (payload: the id) and PostgreSQL delivers them at commit to
 * every connection that LISTENs (store_pg_listen()).
 *
 * Invariants: a transaction is open only inside one call (or between
 * store_pg_begin_group() and its end); commits that acknowledge something to
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
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "server/store_backend.h"

/* Generated from migrations/pg/ by tools/bin2c (server/meson.build). */
extern const struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} kevald_pg_migrations[];
extern const unsigned long kevald_pg_migrations_count;

#define RESET_BACKOFF_MIN_MS 100
#define RESET_BACKOFF_MAX_MS 5000
#define MAX_PARAMS 16
#define INSERT_CHUNK 256                        /* rows per multi-row INSERT */
#define MAX_PREPARED 64                         /* statements prepared per connection */

typedef struct StorePg StorePg;

struct StorePg {
        PGconn *conn;
        char *dsn_shown;        /* the DSN with its password elided, for messages */
        bool in_group;
        bool group_lost;
        bool listening;
        bool was_lost;          /* logged the loss; log the return once */
        double next_reset;      /* monotonic seconds: no PQreset before */
        int backoff_ms;
        const char *prepared[MAX_PREPARED]; /* runp(): the SQL (a literal) of statement "k<i>" */
        int n_prepared;
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
        s->in_group = false;
        s->group_lost = false;
        s->n_prepared = 0;      /* a new session: nothing is prepared there */
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

/*
 * Run @sql with @p; on success *@ret_res holds the result (PQclear()) or is
 * not set when @ret_res is NULL. Failures are logged once here.
 */
static int run(StorePg *s, const char *what, const char *sql, const Params *p, PGresult **ret_res)
{
        PGresult *res;
        ExecStatusType st;
        int r;

        if (conn_lost(s)) {
                note_lost(s);
                return -ENOTCONN;
        }
        /* Without parameters: PQexec, which also takes several statements. */
        res = p ? PQexecParams(s->conn, sql, p->n, NULL, p->v, p->len, p->fmt, 0) : PQexec(s->conn, sql);
        st = PQresultStatus(res);
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
                log_error("store: %s failed: %s", what, res ? PQresultErrorMessage(res) : PQerrorMessage(s->conn));
        PQclear(res);
        return r;
}

/*
 * run() for a statement whose text is a literal (its address is its key):
 * prepared once per connection and executed by name afterwards, which
 * saves the parse and the planning (half of a claim's time).
 */
static int runp(StorePg *s, const char *what, const char *sql, const Params *p, PGresult **ret_res)
{
        static const Params none = { .n = 0 };
        char name[16];
        PGresult *res;
        ExecStatusType st;
        int i, r;

        if (conn_lost(s)) {
                note_lost(s);
                return -ENOTCONN;
        }
        if (!p)
                p = &none;
        for (i = 0; i < s->n_prepared && s->prepared[i] != sql; i++)
                ;
        if (i == s->n_prepared && i == MAX_PREPARED)
                return run(s, what, sql, p, ret_res);
        snprintf(name, sizeof(name), "k%d", i);
        if (i == s->n_prepared) {
                res = PQprepare(s->conn, name, sql, p->n, NULL);
                if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                        r = errno_from_result(s, res);
                        if (r == -ENOTCONN)
                                note_lost(s);
                        else
                                log_error("store: preparing %s failed: %s", what, PQresultErrorMessage(res));
                        PQclear(res);
                        return r;
                }
                PQclear(res);
                s->prepared[s->n_prepared++] = sql;
        }
        res = PQexecPrepared(s->conn, name, p->n, p->v, p->len, p->fmt, 0);
        st = PQresultStatus(res);
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
        else if (r != -EEXIST)
                log_error("store: %s failed: %s", what, PQresultErrorMessage(res));
        PQclear(res);
        return r;
}

static int exec_simple(StorePg *s, const char *what, const char *sql)
{
        return run(s, what, sql, NULL, NULL);
}

static int tx_begin(StorePg *s)
{
        int r;

        if (s->in_group)
                return -EINVAL; /* the group's transaction is open; only inserts may join it */
        r = ensure_conn(s);
        if (r < 0)
                return r;
        return exec_simple(s, "BEGIN", "BEGIN");
}

/* BEGIN with synchronous_commit off: for what may be redone after a database crash. */
static int tx_begin_async(StorePg *s)
{
        int r = tx_begin(s);
        if (r == 0) {
                r = exec_simple(s, "set synchronous_commit", "SET LOCAL synchronous_commit = off");
                if (r < 0 && !conn_lost(s))
                        exec_simple(s, "ROLLBACK", "ROLLBACK");
        }
        return r;
}

/* Commit when @r is 0, else roll back. Returns @r or the commit's error. */
static int tx_end(StorePg *s, int r)
{
        if (conn_lost(s))
                return r != 0 ? r : -ENOTCONN;
        if (r == 0)
                r = exec_simple(s, "COMMIT", "COMMIT");
        else
                exec_simple(s, "ROLLBACK", "ROLLBACK");
        return r;
}

static int64_t get_i64(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static double get_double(const PGresult *res, int row, int col)
{
        return strtod(PQgetvalue(res, row, col), NULL);
}

static char *get_strdup(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? NULL : strdup(PQgetvalue(res, row, col));
}

static json_t *get_json(const PGresult *res, int row, int col)
{
        if (PQgetisnull(res, row, col))
                return NULL;
        return json_loadb(PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col), JSON_DECODE_ANY, NULL);
}

/* Row @i of a result as store_rules.c reads it (StoreRow). */
static bool pg_is_null(const StoreRow *row, int col)
{
        return PQgetisnull(row->res, row->i, col);
}

static int64_t pg_i64(const StoreRow *row, int col)
{
        return get_i64(row->res, row->i, col);
}

static double pg_real(const StoreRow *row, int col)
{
        return get_double(row->res, row->i, col);
}

static const char *pg_text(const StoreRow *row, int col, size_t *ret_len)
{
        if (PQgetisnull(row->res, row->i, col))
                return NULL;
        if (ret_len)
                *ret_len = (size_t)PQgetlength(row->res, row->i, col);
        return PQgetvalue(row->res, row->i, col);
}

static StoreRow pg_row(const PGresult *res, int i)
{
        return (StoreRow){ .res = (PGresult *)res, .i = i, .is_null = pg_is_null, .i64 = pg_i64, .real = pg_real,
                           .text = pg_text };
}

static json_t *get_real_or_null(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? json_null() : json_real(get_double(res, row, col));
}

static json_t *get_text_or_null(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? json_null() : json_string(PQgetvalue(res, row, col));
}

/* A bytea column (text format, hex) into a new buffer. */
static int get_bytes(const PGresult *res, int row, int col, uint8_t **ret, size_t *ret_len)
{
        size_t len = 0;
        unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(res, row, col), &len);
        uint8_t *copy;

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
static int migrate(StorePg *s)
{
        int known = 0, current = 0, r;

        for (unsigned long i = 0; i < kevald_pg_migrations_count; i++) {
                int v = store_migration_number(kevald_pg_migrations[i].name);
                if (v <= known) {
                        log_error("store: migration \"%s\" is misnumbered", kevald_pg_migrations[i].name);
                        return -EINVAL;
                }
                known = v;
        }
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
                log_error("store: database %s has schema version %d, newer than this kevald knows (%d); "
                          "refusing to open it: upgrade kevald", s->dsn_shown, current, known);
                r = STORE_E_NEWER_DB;
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

static int ensure_secret(StorePg *s)
{
        uint8_t secret[32];
        size_t got = 0;
        Params p = { .n = 0 };

        while (got < sizeof(secret)) {
                ssize_t k = getrandom(secret + got, sizeof(secret) - got, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error("store: getrandom failed: %s", strerror(errno));
                        return -errno;
                }
                got += (size_t)k;
        }
        p_bytes(&p, secret, sizeof(secret));
        return run(s, "insert secret", "INSERT INTO meta(key, value) VALUES ('secret', $1) ON CONFLICT DO NOTHING",
                   &p, NULL);
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
 * store_pg_open() - connect, bring the schema up to date, make the secret
 * @dsn:       a libpq URI ("postgresql://user@host:port/db?..."), or
 *             "postgresql:" for the PG* environment
 * @ret_be:    on success, a new StorePg (store_pg_close())
 * Return: 0, STORE_E_NEWER_DB, -ENOTCONN when the server cannot be reached
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
        if (r == 0)
                r = migrate(s);
        if (r == 0)
                r = ensure_secret(s);
        if (r != 0)
                goto out;
        *ret_be = s;
        s = NULL;
out:
        store_pg_close(s);
        return r;
}

/* ---- acceptance --------------------------------------------------------- */

/* The not-done count of @token_id (-1: all), its row locked until commit. */
static int count_active(StorePg *s, int64_t token_id, int64_t *ret_n)
{
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, token_id);
        r = runp(s, "count queued", "SELECT active FROM queue_counts WHERE token_id = $1 FOR UPDATE", &p, &res);
        if (r < 0)
                return r;
        *ret_n = PQntuples(res) ? get_i64(res, 0, 0) : 0;
        PQclear(res);
        return 0;
}

/* 0 with ids (replay), STORE_E_NOT_FOUND (new key), STORE_E_CONFLICT (other body), or -errno. */
static int idem_get(void *be, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                    int64_t **ret_ids, size_t *ret_n)
{
        StorePg *s = be;
        PGresult *res;
        Params p = { .n = 0 };
        uint8_t *h = NULL;
        size_t hlen = 0;
        int r;

        p_int(&p, token_id);
        p_text(&p, key);
        r = runp(s, "idempotency lookup", "SELECT body_sha256, ids FROM idempotency WHERE token_id = $1 AND key = $2",
                &p, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0) {
                r = STORE_E_NOT_FOUND;
        } else {
                r = get_bytes(res, 0, 0, &h, &hlen);
                if (r == 0 && (hlen != 32 || memcmp(h, hash, 32) != 0))
                        r = STORE_E_CONFLICT;
                else if (r == 0)
                        r = store_ids_decode(PQgetvalue(res, 0, 1), max, ret_ids, ret_n);
        }
        free(h);
        PQclear(res);
        return r;
}

static int add_active(void *be, int64_t token_id, int64_t n)
{
        StorePg *s = be;
        Params p = { .n = 0 };
        p_int(&p, token_id);
        p_int(&p, n);
        return runp(s, "count submissions",
                   "INSERT INTO queue_counts AS q (token_id, active) VALUES ($1, $2) "
                   "ON CONFLICT (token_id) DO UPDATE SET active = q.active + excluded.active", &p, NULL);
}

static int add_task(void *be, const char *task, int64_t n)
{
        StorePg *s = be;
        Params p = { .n = 0 };
        p_text(&p, task ? task : "");
        p_int(&p, n);
        return runp(s, "count submissions",
                   "INSERT INTO task_stats AS t (task, submissions) VALUES ($1, $2) "
                   "ON CONFLICT (task) DO UPDATE SET submissions = t.submissions + excluded.submissions", &p, NULL);
}

static int finish_in_tx(void *be, int64_t id, const char *owner, const char *verdict, double speedup,
                        const char *result_text);
static int back_one(void *be, int64_t id);
static int store_pg_cache_get(void *be, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                              size_t *ret_cubin_len);
static int leases(void *be, double before, StoreLease **ret, size_t *ret_n);

/* What store_rules.c's acceptance and reaper rules do here. */
static const StoreTx tx_ops = {
        .add_active = add_active, .add_task = add_task, .finish = finish_in_tx, .back_one = back_one,
        .idem_get = idem_get, .leases = leases, .cache_get = store_pg_cache_get,
};

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
                        const char *run_id = json_string_value(json_object_get(t, "run_id"));
                        r = batch_sql(&b, i == base ? "(" : ", (");
                        if (r == 0)
                                r = batch_int(&b, ids[i]);
                        if (r == 0)
                                r = batch_sql(&b, "::bigint, 'queued', ");
                        if (r == 0)
                                r = batch_param(&b, subs[i].task);
                        if (r == 0)
                                r = batch_sql(&b, "::text, ");
                        if (r == 0)
                                r = batch_param(&b, subs[i].mode);
                        if (r == 0)
                                r = batch_sql(&b, "::text, ");
                        if (r == 0)
                                r = batch_int(&b, subs[i].priority);
                        if (r == 0)
                                r = batch_sql(&b, "::integer, ");
                        if (r == 0)
                                r = batch_int(&b, subs[i].token_id);
                        if (r == 0)
                                r = batch_sql(&b, "::bigint, ");
                        if (r == 0)
                                r = batch_param(&b, run_id);
                        if (r == 0)
                                r = batch_sql(&b, "::text, ");
                        if (r == 0)
                                r = batch_param(&b, created);
                        if (r == 0)
                                r = batch_sql(&b, "::double precision, ");
                        if (r == 0)
                                r = batch_param(&b, tags[i]);
                        if (r == 0)
                                r = batch_sql(&b, "::text)");
                }
                if (r == 0)
                        r = batch_run(s, &b, "insert submissions");
                b.len = 0;
                b.n = 0;
                if (r == 0)
                        r = batch_sql(&b, "INSERT INTO submission_requests(id, request) VALUES ");
                for (size_t i = base; r == 0 && i < end; i++) {
                        r = batch_sql(&b, i == base ? "(" : ", (");
                        if (r == 0)
                                r = batch_int(&b, ids[i]);
                        if (r == 0)
                                r = batch_sql(&b, "::bigint, ");
                        if (r == 0)
                                r = batch_param(&b, subs[i].request_json ? subs[i].request_json : reqs[i]);
                        if (r == 0)
                                r = batch_sql(&b, "::text)");
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

/* Draw @n ids from the submissions sequence, ascending. */
static int draw_ids(StorePg *s, size_t n, int64_t *ids)
{
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, (int64_t)n);
        r = runp(s, "draw ids", "SELECT nextval(pg_get_serial_sequence('submissions', 'id')) "
                "FROM generate_series(1, $1::integer) ORDER BY 1", &p, &res);
        if (r < 0)
                return r;
        if ((size_t)PQntuples(res) != n) {
                PQclear(res);
                return -EIO;
        }
        for (size_t i = 0; i < n; i++)
                ids[i] = get_i64(res, (int)i, 0);
        PQclear(res);
        return 0;
}

/* The body of an insert, inside a transaction or savepoint. */
static int insert_body(StorePg *s, const StoreInsert *ins, int64_t *ids, bool *ret_replayed)
{
        int64_t token_id = ins->subs[0].token_id, active;
        double now = store_now();
        int r;

        r = store_idem_replay(&tx_ops, s, ins, ids, ret_replayed);
        if (r != 0 || *ret_replayed)
                return r;
        /* Locks -1 then the token's row: every insert of the fleet takes them in this order. */
        r = count_active(s, -1, &active);
        if (r < 0)
                return r;
        if (ins->max_queued_total > 0 && active + store_insert_queued(ins) > ins->max_queued_total)
                return STORE_E_FULL;
        if (ins->max_queued_token > 0) {
                r = count_active(s, token_id, &active);
                if (r < 0)
                        return r;
                if (active + store_insert_queued(ins) > ins->max_queued_token)
                        return STORE_E_QUOTA;
        }
        r = draw_ids(s, ins->n, ids);
        if (r == 0)
                r = insert_rows(s, ins->subs, ins->n, ids, now);
        if (r == 0)
                r = store_count_inserted(&tx_ops, s, ins);
        if (r == 0)
                r = store_finish_at_insert(&tx_ops, s, ins, ids);
        if (r < 0)
                return r;
        if (ins->idem_key) {
                Params p = { .n = 0 };
                char *text = store_ids_encode(ids, ins->n);
                if (!text)
                        return -ENOMEM;
                p_int(&p, token_id);
                p_text(&p, ins->idem_key);
                p_bytes(&p, ins->body_hash, 32);
                p_text(&p, text);
                p_double(&p, now);
                r = runp(s, "insert idempotency key", "INSERT INTO idempotency(token_id, key, body_sha256, ids, "
                        "created_at) VALUES ($1, $2, $3, $4, $5)", &p, NULL);
                free(text);
                if (r < 0)
                        return r;
        }
        *ret_replayed = false;
        return 0;
}

/*
 * One attempt in a savepoint; a unique violation on the idempotency key (the
 * same key accepted at the same moment by another host) is retried once:
 * the lookup then sees the other host's committed record.
 */
static int insert_savepoint(StorePg *s, const StoreInsert *ins, int64_t *ids, bool *ret_replayed)
{
        int r = -EEXIST;

        for (int attempt = 0; attempt < 2 && r == -EEXIST; attempt++) {
                r = exec_simple(s, "savepoint", "SAVEPOINT store_ins");
                if (r < 0)
                        return r;
                r = insert_body(s, ins, ids, ret_replayed);
                if (r != 0 && !conn_lost(s))
                        exec_simple(s, "rollback to savepoint", "ROLLBACK TO SAVEPOINT store_ins");
                if (!conn_lost(s)) {
                        int r2 = exec_simple(s, "release savepoint", "RELEASE SAVEPOINT store_ins");
                        if (r == 0 && r2 < 0)
                                r = r2;
                }
        }
        return r;
}

/**
 * store_pg_insert_request() - accept one POST's submissions durably, or refuse them all
 * @store, @ins, @ret_ids, @ret_replayed: as store_insert_request() (store.h)
 *
 * Outside a group: its own transaction, committed at synchronous_commit=on
 * before this returns. Inside a group: a savepoint of the group's
 * transaction. Ids are drawn from the sequence (consecutive unless another
 * host draws at the same moment; the idempotency record keeps ranges).
 *
 * Return: as store_insert_request(); -ENOTCONN when the database is
 * unreachable (nothing was accepted).
 */
static int store_pg_insert_request(void *be, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed)
{
        StorePg *store = be;
        bool replayed = false;
        int64_t *ids;
        int r;

        if (store->in_group && (store->group_lost || conn_lost(store))) {
                store->group_lost = true;
                return conn_lost(store) ? -ENOTCONN : -EIO;
        }
        ids = calloc(ins->n, sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        if (store->in_group) {
                r = insert_savepoint(store, ins, ids, &replayed);
                if (r < 0 && conn_lost(store))
                        store->group_lost = true;
        } else {
                r = tx_begin(store);
                if (r == 0)
                        r = tx_end(store, insert_savepoint(store, ins, ids, &replayed));
        }
        if (r == 0) {
                memcpy(ret_ids, ids, sizeof(*ids) * ins->n);
                if (ret_replayed)
                        *ret_replayed = replayed;
        }
        free(ids);
        return r;
}

/* idem_get() for store_idempotent_lookup(), outside a transaction: the connection first. */
static int store_pg_idem_get(void *be, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                             int64_t **ret_ids, size_t *ret_n)
{
        int r = ensure_conn(be);
        return r < 0 ? r : idem_get(be, token_id, key, hash, max, ret_ids, ret_n);
}

/**
 * store_pg_prune_idempotency() - see store_prune_idempotency()
 */
static int store_pg_prune_idempotency(void *be, double older_than_s, int64_t *ret_deleted)
{
        StorePg *store = be;
        PGresult *res;
        Params p = { .n = 0 };
        int r = ensure_conn(store);

        if (r < 0)
                return r;
        p_double(&p, store_now() - older_than_s);
        r = run(store, "prune idempotency", "DELETE FROM idempotency WHERE created_at < $1", &p, &res);
        if (r < 0)
                return r;
        if (ret_deleted)
                *ret_deleted = strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        return 0;
}

/**
 * store_pg_begin_group() - open the group's transaction (see store_begin_group())
 * Return: 0, -EINVAL when a group is open, -ENOTCONN, or a negative errno.
 */
static int store_pg_begin_group(void *be)
{
        StorePg *store = be;
        int r;

        if (store->in_group)
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        store->in_group = true;
        store->group_lost = false;
        return 0;
}

/**
 * store_pg_commit_group() - commit the group (durable: synchronous_commit=on)
 * Return: 0, -EINVAL without a group, -EIO or -ENOTCONN when the transaction
 * was lost (nothing of the group is stored), or a negative errno.
 */
static int store_pg_commit_group(void *be)
{
        StorePg *store = be;
        int r;

        if (!store->in_group)
                return -EINVAL;
        store->in_group = false;
        if (conn_lost(store))
                r = -ENOTCONN;
        else if (store->group_lost)
                r = tx_end(store, -EIO);
        else
                r = tx_end(store, 0);
        store->group_lost = false;
        return r;
}

/**
 * store_pg_rollback_group() - drop everything the open group inserted
 */
static void store_pg_rollback_group(void *be)
{
        StorePg *store = be;

        if (!store->in_group)
                return;
        store->in_group = false;
        store->group_lost = false;
        if (!conn_lost(store))
                exec_simple(store, "ROLLBACK", "ROLLBACK");
}

/* ---- queue -------------------------------------------------------------- */

static int load_side_json(StorePg *s, const char *sql, int64_t id, json_t **ret)
{
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, id);
        r = runp(s, "load stored JSON", sql, &p, &res);
        if (r < 0)
                return r;
        *ret = NULL;
        if (PQntuples(res) > 0) {
                *ret = get_json(res, 0, 0);
                if (!*ret)
                        r = -EBADMSG;
        }
        PQclear(res);
        return r;
}

/* STORE_E_NOT_FOUND when @id does not exist (or is another token's), else STORE_E_CONFLICT. */
static int why_not(StorePg *s, int64_t id, int64_t token_id)
{
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, id);
        r = runp(s, "look up submission", "SELECT token_id FROM submissions WHERE id = $1", &p, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                r = STORE_E_NOT_FOUND;
        else
                r = token_id && get_i64(res, 0, 0) != token_id ? STORE_E_NOT_FOUND : STORE_E_CONFLICT;
        PQclear(res);
        return r;
}

/*
 * The best waiting row of a stage: highest priority, then the token served
 * longest ago by this stage (its oldest job breaking ties), then the
 * oldest. FOR UPDATE SKIP LOCKED: a row another host is claiming right now
 * is passed over, not waited for.
 *
 * CLAIM_SQL walks the index instead of sorting the queue: the tokens with
 * waiting work at the top priority by a skip-scan of (state, priority,
 * token_id, id), ordered by their service time, then per token (lazily, in
 * that order, stopping at the first hit) its oldest unlocked row. A claim
 * costs O(tokens x log n): 1.3 ms against 66 ms for a sort of 20,000
 * waiting rows. When every top-priority row is locked by other claimers
 * at that instant, CLAIM_ANY_SQL (a sort over every waiting row) takes
 * the best unlocked one of any priority.
 */
#define CLAIM_PICK(FROM, SERVED)                                                                              \
        "WITH RECURSIVE p AS (SELECT max(priority) AS pri FROM submissions WHERE state = '" FROM "'), "       \
        "t(tok) AS (SELECT (SELECT min(token_id) FROM submissions WHERE state = '" FROM "' "                  \
        "AND priority = (SELECT pri FROM p)) UNION ALL SELECT (SELECT min(token_id) FROM submissions "        \
        "WHERE state = '" FROM "' AND priority = (SELECT pri FROM p) AND token_id > t.tok) FROM t "            \
        "WHERE t.tok IS NOT NULL), "                                                                          \
        "o AS (SELECT t.tok, coalesce(ts." SERVED ", 0) AS served, (SELECT min(id) FROM submissions "        \
        "WHERE state = '" FROM "' AND priority = (SELECT pri FROM p) AND token_id = t.tok) AS first "         \
        "FROM t LEFT JOIN token_service ts ON ts.token_id = t.tok WHERE t.tok IS NOT NULL), "                 \
        "c AS (SELECT j.id FROM (SELECT tok, served, first FROM o ORDER BY served, first) oo "               \
        "CROSS JOIN LATERAL (SELECT s.id FROM submissions s WHERE s.state = '" FROM "' "                      \
        "AND s.priority = (SELECT pri FROM p) AND s.token_id = oo.tok ORDER BY s.id LIMIT 1 "                 \
        "FOR UPDATE SKIP LOCKED) j LIMIT 1) "
#define CLAIM_PICK_ANY(FROM, SERVED)                                                                          \
        "WITH c AS (SELECT s.id FROM submissions s LEFT JOIN token_service ts ON ts.token_id = s.token_id "   \
        "WHERE s.state = '" FROM "' ORDER BY s.priority DESC, coalesce(ts." SERVED ", 0), s.id "              \
        "LIMIT 1 FOR UPDATE OF s SKIP LOCKED) "
#define CLAIM_UPDATE(TO)                                                                                      \
        "UPDATE submissions u SET state = '" TO "', lease_owner = $1, lease_expires = $2, "                   \
        "attempts = u.attempts + 1, stage_attempts = u.stage_attempts + 1, "                                  \
        "started_at = coalesce(u.started_at, $3) FROM c WHERE u.id = c.id "                                  \
        "RETURNING u.id, u.stage_attempts, u.priority, u.token_id, u.task, u.mode, u.cache_key"
#define CLAIM_SQL(TO, FROM, SERVED) CLAIM_PICK(FROM, SERVED) CLAIM_UPDATE(TO)
#define CLAIM_ANY_SQL(TO, FROM, SERVED) CLAIM_PICK_ANY(FROM, SERVED) CLAIM_UPDATE(TO)

/**
 * store_pg_claim_next() - take the next job for a stage (see store_claim_next())
 *
 * One UPDATE over a FOR UPDATE SKIP LOCKED pick: hosts claiming at once
 * never take the same job and never queue behind one another's pick. The
 * token's service time is recorded in the same transaction.
 *
 * Return: 0, STORE_E_EMPTY, -EINVAL, -ENOTCONN, or a negative errno.
 */
static int store_pg_claim_next(void *be, Stage stage, const char *owner, double lease_s, StoreJob **ret_job)
{
        StorePg *store = be;

        static const char *const claim[2] = {
                CLAIM_SQL("compiling", "queued", "compile_at"),
                CLAIM_SQL("running", "compiled", "run_at"),
        };
        static const char *const claim_any[2] = {
                CLAIM_ANY_SQL("compiling", "queued", "compile_at"),
                CLAIM_ANY_SQL("running", "compiled", "run_at"),
        };
        /*
         * The token's service time: a row another claimer is stamping at this
         * instant is skipped, not waited for (its stamp is as recent), so
         * claims of one busy token do not queue on its token_service row.
         */
        static const char *const served[2] = {
                "WITH l AS (SELECT token_id FROM token_service WHERE token_id = $1 FOR UPDATE SKIP LOCKED) "
                "UPDATE token_service t SET compile_at = $2 FROM l WHERE t.token_id = l.token_id",
                "WITH l AS (SELECT token_id FROM token_service WHERE token_id = $1 FOR UPDATE SKIP LOCKED) "
                "UPDATE token_service t SET run_at = $2 FROM l WHERE t.token_id = l.token_id",
        };
        static const char *const served_new[2] = {
                "INSERT INTO token_service(token_id, compile_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                "INSERT INTO token_service(token_id, run_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        };
        StoreJob *job = NULL;
        PGresult *res = NULL;
        double now = store_now();
        int r;

        /* Nothing waiting: one index probe, no transaction (new work comes with its own NOTIFY). */
        r = ensure_conn(store);
        if (r < 0)
                return r;
        r = runp(store, "look for waiting jobs", stage == STAGE_COMPILE
                ? "SELECT 1 FROM submissions WHERE state = 'queued' LIMIT 1"
                : "SELECT 1 FROM submissions WHERE state = 'compiled' LIMIT 1", NULL, &res);
        if (r < 0)
                return r;
        bool any = PQntuples(res) > 0;
        PQclear(res);
        res = NULL;
        if (!any)
                return STORE_E_EMPTY;
        r = tx_begin_async(store);
        if (r < 0)
                return r;
        Params p = { .n = 0 };
        p_text(&p, owner);
        p_double(&p, now + lease_s);
        p_double(&p, now);
        r = runp(store, "claim", claim[stage], &p, &res);
        if (r == 0 && PQntuples(res) == 0) {
                PQclear(res);
                res = NULL;
                r = runp(store, "claim", claim_any[stage], &p, &res);
        }
        if (r < 0)
                goto out;
        if (PQntuples(res) == 0) {
                r = STORE_E_EMPTY;
                goto out;
        }
        job = calloc(1, sizeof(*job));
        if (!job) {
                r = -ENOMEM;
                goto out;
        }
        job->id = get_i64(res, 0, 0);
        job->attempts = (int)get_i64(res, 0, 1);
        job->priority = (int)get_i64(res, 0, 2);
        job->token_id = get_i64(res, 0, 3);
        job->task = get_strdup(res, 0, 4);
        job->mode = get_strdup(res, 0, 5);
        if (!PQgetisnull(res, 0, 6)) {
                uint8_t *key = NULL;
                size_t len = 0;
                r = get_bytes(res, 0, 6, &key, &len);
                if (r < 0)
                        goto out;
                if (len == 32) {
                        memcpy(job->cache_key, key, 32);
                        job->has_cache_key = true;
                }
                free(key);
        }
        if (!job->mode) {
                r = -ENOMEM;
                goto out;
        }
        r = load_side_json(store, "SELECT request FROM submission_requests WHERE id = $1", job->id, &job->request);
        if (r == 0 && !job->request)
                r = -EBADMSG;
        if (r == 0 && stage == STAGE_RUN)
                r = load_side_json(store, "SELECT compile FROM submission_compiles WHERE id = $1", job->id,
                                   &job->compile);
        if (r < 0)
                goto out;
        /* Last, just before the commit: the token_service row stays locked for the shortest time. */
        PQclear(res);
        res = NULL;
        Params q = { .n = 0 };
        p_int(&q, job->token_id);
        p_double(&q, now);
        r = runp(store, "record the token served", served[stage], &q, &res);
        if (r == 0 && strtoll(PQcmdTuples(res), NULL, 10) == 0)
                r = runp(store, "record the token served", served_new[stage], &q, NULL);
out:
        PQclear(res);
        if (r == STORE_E_EMPTY) {
                int r2 = tx_end(store, 0);
                r = r2 < 0 ? r2 : r;
        } else {
                r = tx_end(store, r);
        }
        if (r == 0) {
                *ret_job = job;
                job = NULL;
        }
        store_job_free(job);
        return r;
}

/* Run one UPDATE in its own transaction; @ret_n: rows changed. */
static int update_one(StorePg *s, bool async, const char *what, const char *sql, const Params *p, int64_t *ret_n)
{
        PGresult *res;
        int r = async ? tx_begin_async(s) : tx_begin(s);

        if (r < 0)
                return r;
        r = runp(s, what, sql, p, &res);
        if (r == 0) {
                *ret_n = strtoll(PQcmdTuples(res), NULL, 10);
                PQclear(res);
        }
        return tx_end(s, r);
}

/**
 * store_pg_heartbeat() - extend a job's lease (see store_heartbeat())
 */
static int store_pg_heartbeat(void *be, int64_t id, const char *owner, double lease_s)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        if (!owner || !(lease_s > 0))
                return -EINVAL;
        p_int(&p, id);
        p_text(&p, owner);
        p_double(&p, store_now() + lease_s);
        r = update_one(store, true, "heartbeat", "UPDATE submissions SET lease_expires = $3 WHERE id = $1 "
                       "AND lease_owner = $2 AND state IN ('compiling', 'running')", &p, &n);
        if (r == 0 && n == 0)
                r = why_not(store, id, 0);
        return r;
}

/**
 * store_pg_heartbeat_owner() - extend every lease of @owner (see store_heartbeat_owner())
 */
static int store_pg_heartbeat_owner(void *be, const char *owner, double lease_s, int *ret_extended)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        if (!owner || !(lease_s > 0))
                return -EINVAL;
        p_text(&p, owner);
        p_double(&p, store_now() + lease_s);
        /* SKIP LOCKED: a row being finished right now needs no extension, and waiting on it
         * would hold up the caller (the listener thread renews leases too). */
        r = update_one(store, true, "heartbeat", "UPDATE submissions SET lease_expires = $2 WHERE id IN (SELECT id "
                       "FROM submissions WHERE lease_owner = $1 AND state IN ('compiling', 'running') "
                       "FOR UPDATE SKIP LOCKED)", &p, &n);
        if (r == 0 && ret_extended)
                *ret_extended = (int)n;
        return r;
}

/**
 * store_pg_host_beat() - upsert hosts(@host_id).last_seen = now
 * Return: 0, -ENOTCONN, or a negative errno.
 */
static int store_pg_host_beat(void *be, const char *host_id)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        double now = store_now();

        p_text(&p, host_id);
        p_double(&p, now);
        return update_one(store, true, "host heartbeat", "INSERT INTO hosts AS h (host_id, started_at, last_seen) "
                          "VALUES ($1, $2, $2) ON CONFLICT (host_id) DO UPDATE SET last_seen = excluded.last_seen",
                          &p, &n);
}

/**
 * store_pg_set_cache_key() - see store_set_cache_key()
 */
static int store_pg_set_cache_key(void *be, int64_t id, const uint8_t key[32])
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        if (!key)
                return -EINVAL;
        p_int(&p, id);
        p_bytes(&p, key, 32);
        r = update_one(store, false, "set cache key", "UPDATE submissions SET cache_key = $2 WHERE id = $1", &p, &n);
        if (r == 0 && n == 0)
                r = STORE_E_NOT_FOUND;
        return r;
}

/**
 * store_pg_set_compiled() - compiling -> compiled (see store_set_compiled())
 */
static int store_pg_set_compiled(void *be, int64_t id, const char *owner, const char *text)
{
        StorePg *store = be;
        PGresult *res = NULL;
        int r = tx_begin(store);

        if (r < 0)
                return r;
        Params p = { .n = 0 };
        p_int(&p, id);
        p_text(&p, owner);
        r = runp(store, "set compiled", "UPDATE submissions SET state = 'compiled', lease_owner = NULL, "
                "lease_expires = NULL, stage_attempts = 0 WHERE id = $1 AND state = 'compiling' "
                "AND ($2::text IS NULL OR lease_owner = $2::text)", &p, &res);
        if (r == 0 && strtoll(PQcmdTuples(res), NULL, 10) == 0)
                r = why_not(store, id, 0);
        PQclear(res);
        if (r != 0)
                goto out;
        Params q = { .n = 0 };
        p_int(&q, id);
        p_text(&q, text);
        r = runp(store, "store compile section", "INSERT INTO submission_compiles(id, compile) VALUES ($1, $2) "
                "ON CONFLICT (id) DO UPDATE SET compile = excluded.compile", &q, NULL);
out:
        return tx_end(store, r);
}

static int put_result(StorePg *s, int64_t id, const char *text)
{
        Params p = { .n = 0 };
        p_int(&p, id);
        p_text(&p, text);
        /* The rollups are fed by the INSERT trigger only, so a replaced result is not counted twice. */
        return runp(s, "store result", "INSERT INTO submission_results(id, result) VALUES ($1, $2) "
                   "ON CONFLICT (id) DO UPDATE SET result = excluded.result", &p, NULL);
}

static int finish_in_tx(void *be, int64_t id, const char *owner, const char *verdict, double speedup,
                        const char *result_text)
{
        StorePg *s = be;
        PGresult *res;
        Params p = { .n = 0 };
        int r;

        p_int(&p, id);
        p_text(&p, verdict);
        if (isfinite(speedup) && speedup > 0)
                p_double(&p, speedup);
        else
                p_text(&p, NULL);
        p_double(&p, store_now());
        p_text(&p, owner);
        r = runp(s, "finish", "UPDATE submissions SET state = 'done', verdict = $2, speedup = $3, finished_at = $4, "
                "lease_owner = NULL, lease_expires = NULL WHERE id = $1 AND state <> 'done' AND ($5::text IS NULL "
                "OR (lease_owner = $5::text AND state IN ('compiling', 'running')))", &p, &res);
        if (r < 0)
                return r;
        if (strtoll(PQcmdTuples(res), NULL, 10) == 0)
                r = why_not(s, id, 0);
        PQclear(res);
        if (r != 0)
                return r;
        return put_result(s, id, result_text);
}

/**
 * store_pg_requeue() - give a claimed job back (see store_requeue())
 */
static int store_pg_requeue(void *be, int64_t id, const char *owner, Stage stage)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        if (!owner || (stage != STAGE_COMPILE && stage != STAGE_RUN))
                return -EINVAL;
        p_int(&p, id);
        p_text(&p, owner);
        p_text(&p, stage == STAGE_COMPILE ? "queued" : "compiled");
        p_text(&p, stage == STAGE_COMPILE ? "compiling" : "running");
        r = update_one(store, false, "requeue", "UPDATE submissions SET state = $3, lease_owner = NULL, "
                       "lease_expires = NULL WHERE id = $1 AND lease_owner = $2 AND state = $4", &p, &n);
        if (r == 0 && n == 0)
                r = why_not(store, id, 0);
        return r;
}

/*
 * Expired leases (@now finite), or every lease of @owner_prefix (start-up):
 * back one stage, or internal_error past @max_attempts. SKIP LOCKED: two
 * hosts reaping at once split the rows between them.
 */
static int back_one(void *be, int64_t id)
{
        Params p = { .n = 0 };
        p_int(&p, id);
        return runp(be, "requeue expired lease", "UPDATE submissions SET state = CASE state "
                    "WHEN 'compiling' THEN 'queued' ELSE 'compiled' END, lease_owner = NULL, "
                    "lease_expires = NULL WHERE id = $1 AND state IN ('compiling', 'running')", &p, NULL);
}

/*
 * StoreTx.leases: this host's leases (@before NaN: at start-up, those of its
 * dead predecessor, owners "<host id>/...") or any host's expired before
 * @before; locked, skipping rows another host's reaper holds.
 */
static int leases(void *be, double before, StoreLease **ret, size_t *ret_n)
{
        StorePg *s = be;
        char prefix[LIMIT_HOST_ID_BYTES + 2];
        PGresult *res = NULL;
        StoreLease *l;
        Params p = { .n = 0 };
        int r, n;

        if (isnan(before)) {
                snprintf(prefix, sizeof(prefix), "%s/", store_host_id());
                p_text(&p, prefix);
                r = run(s, "find this host's leases", "SELECT id, state, stage_attempts, task FROM submissions "
                        "WHERE state IN ('compiling', 'running') AND starts_with(lease_owner, $1) "
                        "FOR UPDATE SKIP LOCKED", &p, &res);
        } else {
                p_double(&p, before);
                r = run(s, "find expired leases", "SELECT id, state, stage_attempts, task FROM submissions "
                        "WHERE state IN ('compiling', 'running') AND lease_expires < $1 "
                        "FOR UPDATE SKIP LOCKED", &p, &res);
        }
        if (r < 0)
                return r;
        n = PQntuples(res);
        l = calloc(n ? (size_t)n : 1, sizeof(*l));
        for (int i = 0; l && i < n; i++) {
                l[i].id = get_i64(res, i, 0);
                snprintf(l[i].state, sizeof(l[i].state), "%s", PQgetvalue(res, i, 1));
                l[i].attempts = (int)get_i64(res, i, 2);
                l[i].task = get_strdup(res, i, 3);
        }
        PQclear(res);
        if (!l)
                return -ENOMEM;
        *ret = l;
        *ret_n = (size_t)n;
        return 0;
}

/**
 * store_pg_cancel() - see store_cancel()
 */
static int store_pg_cancel(void *be, int64_t id, int64_t token_id)
{
        StorePg *store = be;
        PGresult *res = NULL;
        char *text = NULL;
        Params p = { .n = 0 };
        int r = tx_begin(store);

        if (r < 0)
                return r;
        p_int(&p, id);
        p_int(&p, token_id);
        p_double(&p, store_now());
        r = runp(store, "cancel", "UPDATE submissions SET state = 'done', verdict = 'cancelled', finished_at = $3 "
                "WHERE id = $1 AND state IN ('queued', 'compiled') AND ($2 = 0 OR token_id = $2) RETURNING task", &p, &res);
        if (r < 0)
                goto out;
        if (PQntuples(res) == 0) {
                r = why_not(store, id, token_id);
                goto out;
        }
        json_t *er = json_pack("{s:s, s:s?, s:s}", "verdict", "cancelled", "task",
                               PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0), "feedback",
                               "Cancelled before it ran (queued, or compiled and waiting for a GPU).");
        text = er ? json_dumps(er, JSON_COMPACT) : NULL;
        json_decref(er);
        if (!text) {
                r = -ENOMEM;
                goto out;
        }
        r = put_result(store, id, text);
out:
        PQclear(res);
        free(text);
        return tx_end(store, r);
}

/* ---- reads -------------------------------------------------------------- */

#define SUB_COLUMNS "s.id, s.state, s.verdict, s.task, s.mode, s.priority, s.created_at, s.started_at, " \
                    "s.finished_at, s.attempts, s.speedup, s.tags"

/* Columns as SUB_COLUMNS [, result]. */
static json_t *row_to_object(const PGresult *res, int i, bool with_result)
{
        StoreRow row = pg_row(res, i);
        return store_row_submission(&row, with_result);
}

/**
 * store_pg_get_submission() - see store_get_submission()
 */
static int store_pg_get_submission(void *be, int64_t id, json_t **ret_obj)
{
        StorePg *store = be;
        PGresult *res;
        Params p = { .n = 0 };
        int r = ensure_conn(store);

        if (r < 0)
                return r;
        p_int(&p, id);
        r = runp(store, "get submission", "SELECT " SUB_COLUMNS ", r.result FROM submissions s "
                "LEFT JOIN submission_results r ON r.id = s.id WHERE s.id = $1", &p, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0) {
                r = STORE_E_NOT_FOUND;
        } else {
                json_t *o = row_to_object(res, 0, true);
                if (!o)
                        r = -EBADMSG;
                else
                        *ret_obj = o;
        }
        PQclear(res);
        return r;
}

/**
 * store_pg_list_submissions() - see store_list_submissions()
 */
static int store_pg_list_submissions(void *be, json_t *filters, int64_t cursor, int limit, json_t **ret_items,
                              int64_t *ret_next_cursor)
{
        StorePg *store = be;
        StoreListQuery q;
        Params p = { .n = 0 };
        PGresult *res = NULL;
        char sql[1024];
        json_t *items = NULL;
        size_t len;
        int r, n;

        r = store_list_query_parse(filters, cursor, limit, &q);
        if (r < 0)
                return r;
        r = ensure_conn(store);
        if (r < 0)
                return r;
        p_int(&p, q.cursor > 0 ? q.cursor : INT64_MAX);
        len = (size_t)snprintf(sql, sizeof(sql), "SELECT " SUB_COLUMNS "%s FROM submissions s%s WHERE s.id < $1",
                               q.with_result ? ", r.result" : "",
                               q.with_result ? " LEFT JOIN submission_results r ON r.id = s.id" : "");
        for (int i = 0; i < 4; i++)
                if (q.strs[i]) {
                        p_text(&p, q.strs[i]);
                        len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.%s = $%d",
                                                store_list_columns[i], p.n);
                }
        if (q.has_token) {
                p_int(&p, q.token_id);
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.token_id = $%d", p.n);
        }
        if (!isnan(q.since)) {
                p_double(&p, q.since);
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.created_at >= $%d", p.n);
        }
        if (q.has_step) {
                p_int(&p, q.step);
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.tags::jsonb -> 'step' = to_jsonb($%d::bigint)",
                                        p.n);
        }
        if (q.label_v) {
                p_text(&p, q.label_k);
                p_text(&p, q.label_v);
                p_double(&p, q.label_is_num ? q.label_num : NAN);
                len += (size_t)snprintf(sql + len, sizeof(sql) - len,
                                        " AND CASE jsonb_typeof(s.tags::jsonb -> 'labels' -> $%d::text) "
                                        "WHEN 'string' THEN s.tags::jsonb -> 'labels' ->> $%d::text = $%d::text "
                                        "WHEN 'number' THEN (s.tags::jsonb -> 'labels' ->> $%d::text)::double precision "
                                        "= $%d::double precision ELSE false END",
                                        p.n - 2, p.n - 2, p.n - 1, p.n - 2, p.n);
        }
        p_int(&p, q.limit);
        snprintf(sql + len, sizeof(sql) - len, " ORDER BY s.id DESC LIMIT $%d", p.n);
        r = run(store, "list submissions", sql, &p, &res);
        if (r < 0)
                return r;
        items = json_array();
        if (!items) {
                r = -ENOMEM;
                goto out;
        }
        n = PQntuples(res);
        for (int i = 0; i < n; i++) {
                json_t *o = row_to_object(res, i, q.with_result);
                if (!o || json_array_append_new(items, o)) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        *ret_items = items;
        items = NULL;
        *ret_next_cursor = n == q.limit ? get_i64(res, n - 1, 0) : 0;
out:
        PQclear(res);
        json_decref(items);
        return r;
}

/* One scalar (0 when no row or NULL). */
static int scalar(StorePg *s, const char *sql, int64_t *ret)
{
        PGresult *res;
        int r = run(s, "read a count", sql, NULL, &res);
        if (r < 0)
                return r;
        *ret = PQntuples(res) ? get_i64(res, 0, 0) : 0;
        PQclear(res);
        return 0;
}

static int counts_into(StorePg *s, const char *sql, json_t *obj)
{
        PGresult *res;
        int r = run(s, "stats", sql, NULL, &res);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res) && r == 0; i++)
                if (!PQgetisnull(res, i, 0) &&
                    json_object_set_new(obj, PQgetvalue(res, i, 0), json_integer(get_i64(res, i, 1))))
                        r = -ENOMEM;
        PQclear(res);
        return r;
}

/**
 * store_pg_stats() - see store_stats(); the same aggregates, fleet-wide
 */
static int store_pg_stats(void *be, json_t **ret_stats)
{
        StorePg *store = be;
        StoreStatsParts p = { .states = json_object(), .verdicts = json_object(), .tasks = json_array() };
        json_t *t;
        PGresult *res = NULL;
        size_t k;
        int r = -ENOMEM;

        if (!p.states || !p.verdicts || !p.tasks)
                goto out;
        r = ensure_conn(store);
        if (r == 0)
                r = counts_into(store, "SELECT state, count(*) FROM submissions "
                                "WHERE state IN ('queued', 'compiling', 'compiled', 'running') GROUP BY state "
                                "UNION ALL SELECT 'done', coalesce(sum(done), 0) FROM task_stats", p.states);
        if (r == 0)
                r = counts_into(store, "SELECT verdict, n FROM verdict_counts WHERE n > 0 ORDER BY verdict",
                                p.verdicts);
        if (r == 0)
                r = run(store, "stats", "SELECT nullif(task, ''), submissions, done, correct, CASE WHEN done > 0 "
                        "THEN correct::double precision / done END FROM task_stats ORDER BY task", NULL, &res);
        for (int i = 0; r == 0 && i < PQntuples(res); i++) {
                json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:o, s:n}", "task", get_text_or_null(res, i, 0),
                                      "submissions", (json_int_t)get_i64(res, i, 1),
                                      "done", (json_int_t)get_i64(res, i, 2),
                                      "correct", (json_int_t)get_i64(res, i, 3),
                                      "correct_rate", get_real_or_null(res, i, 4), "median_speedup");
                if (!o || json_array_append_new(p.tasks, o))
                        r = -ENOMEM;
        }
        PQclear(res);
        res = NULL;
        /* The (lower) median from the histogram: the first bucket whose running count reaches half. */
        if (r == 0)
                r = run(store, "stats", "SELECT task, bucket, sum(n) OVER (PARTITION BY task ORDER BY bucket), "
                        "sum(n) OVER (PARTITION BY task) FROM task_speedups ORDER BY task, bucket", NULL, &res);
        for (int i = 0; r == 0 && i < PQntuples(res); i++) {
                const char *task = PQgetvalue(res, i, 0);
                int64_t cum = get_i64(res, i, 2), tot = get_i64(res, i, 3);
                if (tot <= 0 || 2 * cum < tot)
                        continue;
                json_array_foreach(p.tasks, k, t) {
                        const char *name = json_string_value(json_object_get(t, "task"));
                        if (strcmp(name ? name : "", task) || !json_is_null(json_object_get(t, "median_speedup")))
                                continue;
                        if (json_object_set_new(t, "median_speedup",
                                                json_real(exp2(((double)get_i64(res, i, 1) + 0.5) / 8.0))))
                                r = -ENOMEM;
                }
        }
        PQclear(res);
        if (r == 0)
                r = scalar(store, "SELECT count(*) FROM compile_cache", &p.entries);
        if (r == 0)
                r = scalar(store, "SELECT value FROM counters WHERE name = 'cache_hits'", &p.hits);
        if (r == 0)
                r = scalar(store, "SELECT value FROM counters WHERE name = 'cache_misses'", &p.misses);
        if (r == 0)
                r = scalar(store, "SELECT value FROM counters WHERE name = 'cache_bytes'", &p.bytes);
        if (r == 0)
                r = scalar(store, "SELECT active FROM queue_counts WHERE token_id = -1", &p.depth);
        if (r == 0)
                r = scalar(store, "SELECT coalesce(sum(submissions), 0) FROM task_stats", &p.total);
out:
        return store_stats_object(&p, r, ret_stats);
}

/**
 * store_pg_queue_depth() - see store_queue_depth()
 */
static int store_pg_queue_depth(void *be, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running)
{
        StorePg *store = be;
        int64_t d[3] = { 0, 0, 0 };
        PGresult *res;
        int r = ensure_conn(store);

        if (r == 0)
                r = run(store, "queue depth", "SELECT state, count(*) FROM submissions "
                        "WHERE state IN ('queued', 'compiled', 'running') GROUP BY state", NULL, &res);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                const char *state = PQgetvalue(res, i, 0);
                int idx = !strcmp(state, "queued") ? 0 : !strcmp(state, "compiled") ? 1 : 2;
                d[idx] = get_i64(res, i, 1);
        }
        PQclear(res);
        if (ret_queued)
                *ret_queued = d[0];
        if (ret_compiled)
                *ret_compiled = d[1];
        if (ret_running)
                *ret_running = d[2];
        return 0;
}

/* Column types (pg_type OIDs) the dashboards return. */
enum { OID_BOOL = 16, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_FLOAT4 = 700, OID_FLOAT8 = 701,
       OID_NUMERIC = 1700 };

/* Every row of @res as objects keyed by column name, appended to @rows. */
static int rows_to_objects(const PGresult *res, json_t *rows)
{
        int nf = PQnfields(res);

        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o = json_object();
                if (!o)
                        return -ENOMEM;
                for (int c = 0; c < nf; c++) {
                        const char *v = PQgetvalue(res, i, c);
                        json_t *j;
                        if (PQgetisnull(res, i, c)) {
                                j = json_null();
                        } else {
                                switch (PQftype(res, c)) {
                                case OID_INT2:
                                case OID_INT4:
                                case OID_INT8:
                                        j = json_integer(strtoll(v, NULL, 10));
                                        break;
                                case OID_BOOL:
                                        j = json_integer(v[0] == 't');
                                        break;
                                case OID_NUMERIC: /* sum() of bigints: integral ones stay integers */
                                        j = strpbrk(v, ".eEN") ? json_real(strtod(v, NULL))
                                                               : json_integer(strtoll(v, NULL, 10));
                                        break;
                                case OID_FLOAT4:
                                case OID_FLOAT8:
                                        j = json_real(strtod(v, NULL));
                                        break;
                                default:
                                        j = json_stringn(v, (size_t)PQgetlength(res, i, c));
                                        break;
                                }
                        }
                        if (json_object_set_new(o, PQfname(res, c), j)) {
                                json_decref(o);
                                return -ENOMEM;
                        }
                }
                if (json_array_append_new(rows, o))
                        return -ENOMEM;
        }
        return 0;
}

/**
 * store_pg_query_view() - see store_query_view()
 */
static int store_pg_query_view(void *be, const char *view, int limit, json_t **ret_rows)
{
        StorePg *store = be;
        PGresult *res = NULL;
        Params p = { .n = 0 };
        char sql[160];
        json_t *rows;
        size_t len;
        int r;

        if (!view || strncmp(view, "v_", 2) || (len = strlen(view)) > 64 || limit < 1 || limit > LIMIT_LIST_PAGE_MAX)
                return -EINVAL;
        for (size_t i = 2; i < len; i++)
                if (!((view[i] >= 'a' && view[i] <= 'z') || (view[i] >= '0' && view[i] <= '9') || view[i] == '_'))
                        return -EINVAL;
        r = ensure_conn(store);
        if (r < 0)
                return r;
        p_text(&p, view);
        r = run(store, "find view", "SELECT 1 FROM pg_views WHERE schemaname = current_schema() AND viewname = $1",
                &p, &res);
        if (r < 0)
                return r;
        bool found = PQntuples(res) > 0;
        PQclear(res);
        if (!found)
                return STORE_E_NOT_FOUND;
        rows = json_array();
        if (!rows)
                return -ENOMEM;
        snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\" LIMIT %d", view, limit);
        r = run(store, "read view", sql, NULL, &res);
        if (r == 0) {
                r = rows_to_objects(res, rows);
                PQclear(res);
        }
        if (r != 0) {
                json_decref(rows);
                return r;
        }
        *ret_rows = rows;
        return 0;
}

/* The queries of StoreDash over the views of migrations/pg/006 and 007 (store.h lists the arguments). */
static const char *const dash_sql[STORE_DASH__COUNT] = {
        [STORE_DASH_QUEUE] = "SELECT state, jobs, oldest_created_at FROM v_queue_depth "
                "WHERE state IN ('queued', 'compiling', 'compiled', 'running')",
        [STORE_DASH_ACTIVITY] = "SELECT minute_start, verdict, n, latency_sum_s, compiles, compile_ms_sum, "
                "cache_hits, cache_misses FROM v_activity_minutely WHERE minute_start >= $1::double precision "
                "ORDER BY minute_start",
        [STORE_DASH_GPU_BUSY] = "SELECT minute_start, gpu, jobs, busy_ms, busy_fraction FROM v_gpu_busy_minutely "
                "WHERE minute_start >= $1::double precision ORDER BY minute_start, gpu",
        [STORE_DASH_RUNS] = "SELECT * FROM v_run_summary WHERE $1::text IS NULL OR strpos(run_id, $1::text) > 0 "
                "ORDER BY last_finished_at DESC, run_id LIMIT $2::bigint OFFSET $3::bigint",
        [STORE_DASH_RUN] = "SELECT * FROM v_run_summary WHERE run_id = $1::text",
        [STORE_DASH_RUN_STEPS] = "SELECT * FROM v_run_steps WHERE run_id = $1::text "
                "AND coalesce(step, -1) BETWEEN $2::bigint AND $3::bigint ORDER BY coalesce(step, -1)",
        [STORE_DASH_RUN_SPEEDUPS] = "SELECT step, bucket, speedup_lo, speedup_hi, n FROM v_run_step_speedups "
                "WHERE run_id = $1::text AND coalesce(step, -1) BETWEEN $2::bigint AND $3::bigint "
                "ORDER BY coalesce(step, -1), bucket",
        /* best_id and best_step: those of the row with the highest best_speedup (SQLite's bare columns). */
        [STORE_DASH_RUN_TASKS] = "SELECT task, sum(evaluated) AS samples, sum(compiled) AS compiled, "
                "sum(correct) AS correct, max(best_speedup) AS best_speedup, "
                "(array_agg(best_id ORDER BY best_speedup DESC NULLS LAST))[1] AS best_id, "
                "(array_agg(step ORDER BY best_speedup DESC NULLS LAST))[1] AS best_step, sum(checked) AS checked "
                "FROM v_run_step_tasks WHERE run_id = $1::text AND coalesce(step, -1) BETWEEN $2::bigint "
                "AND $3::bigint GROUP BY task ORDER BY task",
        [STORE_DASH_TASKS] = "SELECT * FROM v_task_summary WHERE $1::text IS NULL OR strpos(task, $1::text) > 0 "
                "ORDER BY submissions DESC, task LIMIT $2::bigint OFFSET $3::bigint",
        [STORE_DASH_TASK] = "SELECT * FROM v_task_summary WHERE task = $1::text",
        [STORE_DASH_TASK_VERDICTS] = "SELECT verdict, n FROM v_task_verdicts WHERE task = $1::text "
                "ORDER BY n DESC, verdict",
        [STORE_DASH_TASK_SPEEDUPS] = "SELECT bucket, speedup_lo, speedup_hi, n FROM v_task_speedup_hist "
                "WHERE task = $1::text ORDER BY bucket",
        [STORE_DASH_LEADERBOARD] = "SELECT id, speedup, run_id, step, sample, turn, finished_at "
                "FROM v_task_leaderboard WHERE task = $1::text ORDER BY speedup DESC, id "
                "LIMIT $2::bigint OFFSET $3::bigint",
        [STORE_DASH_TURN] = "SELECT id, parent, turn, run_id, step, sample, task, state, verdict, speedup, "
                "token_id, created_at FROM v_submission_turns WHERE id = $1::bigint",
        [STORE_DASH_CHILDREN] = "SELECT id, parent, turn, run_id, step, sample, task, state, verdict, speedup, "
                "token_id, created_at FROM v_submission_turns WHERE parent = $1::bigint "
                "AND ($2::bigint < 0 OR token_id = $2::bigint) ORDER BY id LIMIT $3::bigint",
        [STORE_DASH_REQUEST] = "SELECT request FROM submission_requests WHERE id = $1::bigint",
        [STORE_DASH_HISTOGRAMS] = "SELECT metric, label, le, n, count, sum FROM v_metric_histograms "
                "ORDER BY metric, label, le IS NULL, le",
        [STORE_DASH_RUN_VERDICTS] = "SELECT step, verdict, n FROM v_run_step_verdicts WHERE run_id = $1::text "
                "AND coalesce(step, -1) BETWEEN $2::bigint AND $3::bigint ORDER BY coalesce(step, -1), verdict",
        [STORE_DASH_TASKS_NAMED] = "SELECT * FROM v_task_summary "
                "WHERE task IN (SELECT json_array_elements_text($1::json))",
        [STORE_DASH_REFERENCES] = "SELECT * FROM v_task_reference_times "
                "WHERE task IN (SELECT json_array_elements_text($1::json)) ORDER BY task, gpu_name, shape",
};

/**
 * store_pg_dashboard_rows() - see store_dashboard_rows()
 */
static int store_pg_dashboard_rows(void *be, StoreDash q, json_t *args, json_t **ret_rows)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        PGresult *res;
        json_t *rows, *v;
        size_t i;
        int r;

        if ((unsigned)q >= STORE_DASH__COUNT || (args && !json_is_array(args)) || json_array_size(args) > MAX_PARAMS)
                return -EINVAL;
        json_array_foreach(args, i, v) {
                if (json_is_integer(v))
                        p_int(&p, json_integer_value(v));
                else if (json_is_real(v))
                        p_double(&p, json_real_value(v));
                else if (json_is_string(v))
                        p_text(&p, json_string_value(v));
                else if (json_is_null(v))
                        p_text(&p, NULL);
                else
                        return -EINVAL;
        }
        r = ensure_conn(store);
        if (r < 0)
                return r;
        r = runp(store, "dashboard query", dash_sql[q], &p, &res);
        if (r < 0)
                return r == -EIO || r == -EPROTO ? -EINVAL : r; /* a bad parameter in the query */
        rows = json_array();
        r = rows ? rows_to_objects(res, rows) : -ENOMEM;
        PQclear(res);
        if (r < 0) {
                json_decref(rows);
                return r;
        }
        *ret_rows = rows;
        return 0;
}

/**
 * store_pg_schema_version() - the last migration applied (kevald_schema)
 */
static int store_pg_schema_version(void *be, int *ret_version)
{
        StorePg *store = be;
        int r = ensure_conn(store);
        return r < 0 ? r : schema_version(store, ret_version);
}

/* ---- compile cache (shared by every host) -------------------------------- */

static int counter_add(StorePg *s, const char *name, int64_t delta)
{
        Params p = { .n = 0 };
        p_text(&p, name);
        p_int(&p, delta);
        return runp(s, "count", "UPDATE counters SET value = value + $2 WHERE name = $1", &p, NULL);
}

/**
 * store_pg_cache_get() - see store_cache_get(); a CUBIN compiled by any host
 */
static int store_pg_cache_get(void *be, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                       size_t *ret_cubin_len)
{
        StorePg *store = be;
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        PGresult *res = NULL;
        Params p = { .n = 0 };
        int r;

        p_bytes(&p, key, 32);
        r = runp(store, "cache get", "SELECT compile, cubin FROM compile_cache WHERE key = $1", &p, &res);
        if (r < 0)
                goto out;
        if (PQntuples(res) == 0) {
                r = counter_add(store, "cache_misses", 1);
                if (r == 0)
                        r = STORE_E_NOT_FOUND;
                goto out;
        }
        compile = get_json(res, 0, 0);
        if (!compile) {
                r = -EBADMSG;
                goto out;
        }
        if (!PQgetisnull(res, 0, 1)) {
                r = get_bytes(res, 0, 1, &cubin, &len);
                if (r < 0)
                        goto out;
        }
        Params q = { .n = 0 };
        p_bytes(&q, key, 32);
        p_double(&q, store_now());
        r = runp(store, "cache hit", "UPDATE compile_cache SET hits = hits + 1, last_used_at = $2 WHERE key = $1",
                &q, NULL);
        if (r == 0)
                r = counter_add(store, "cache_hits", 1);
out:
        PQclear(res);
        if (r == 0) {
                *ret_compile = compile;
                *ret_cubin = cubin;
                *ret_cubin_len = len;
                compile = NULL;
                cubin = NULL;
        }
        json_decref(compile);
        free(cubin);
        return r;
}

/**
 * store_pg_cache_put() - see store_cache_put()
 */
static int store_pg_cache_put(void *be, const uint8_t key[32], const char *text, const uint8_t *cubin,
                               size_t cubin_len)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        p_bytes(&p, key, 32);
        p_text(&p, text);
        if (cubin)
                p_bytes(&p, cubin, cubin_len);
        else
                p_text(&p, NULL);
        p_double(&p, store_now());
        r = update_one(store, true, "cache put", "INSERT INTO compile_cache AS c (key, compile, cubin, hits, "
                       "created_at, last_used_at) VALUES ($1, $2, $3, 0, $4, $4) ON CONFLICT (key) DO UPDATE SET "
                       "compile = excluded.compile, cubin = excluded.cubin, last_used_at = excluded.last_used_at",
                       &p, &n);
        return r;
}

/**
 * store_pg_cache_prune() - see store_cache_prune(); rounds of at most 64 entries
 */
static int store_pg_cache_prune(void *be, int64_t max_bytes, int64_t *ret_deleted)
{
        StorePg *store = be;
        int64_t deleted = 0, bytes = 0;
        int r;

        if (max_bytes < 0)
                return -EINVAL;
        r = ensure_conn(store);
        while (r == 0) {
                Params p = { .n = 0 };
                int64_t n = 0;

                r = scalar(store, "SELECT value FROM counters WHERE name = 'cache_bytes'", &bytes);
                if (r < 0 || bytes <= max_bytes)
                        break;
                p_int(&p, bytes - max_bytes);
                r = update_one(store, true, "cache prune",
                               "DELETE FROM compile_cache WHERE key IN (SELECT key FROM (SELECT key, "
                               "sum(sz) OVER (ORDER BY last_used_at, key ROWS UNBOUNDED PRECEDING) - sz AS before "
                               "FROM (SELECT key, last_used_at, octet_length(compile) + coalesce(octet_length(cubin), 0) "
                               "AS sz FROM compile_cache ORDER BY last_used_at, key LIMIT 64) a) b "
                               "WHERE before < $1::bigint)", &p, &n);
                if (r < 0)
                        break;
                deleted += n;
                if (n == 0)
                        break;
        }
        if (r == 0 && ret_deleted)
                *ret_deleted = deleted;
        return r;
}

/* ---- tokens ------------------------------------------------------------- */

/**
 * store_pg_token_create() - see store_token_create()
 */
static int store_pg_token_create(void *be, const char *name, const uint8_t hash[32], json_t *limits, int64_t *ret_id)
{
        StorePg *store = be;
        PGresult *res = NULL;
        Params p = { .n = 0 };
        char *text = NULL;
        int r;

        if (!name || !*name || strlen(name) > LIMIT_NAME_BYTES || !hash || (limits && !json_is_object(limits)))
                return -EINVAL;
        if (limits && !(text = json_dumps(limits, JSON_COMPACT)))
                return -ENOMEM;
        r = ensure_conn(store);
        if (r == 0) {
                p_text(&p, name);
                p_bytes(&p, hash, 32);
                p_double(&p, store_now());
                p_text(&p, text);
                r = run(store, "token create", "INSERT INTO tokens(name, hash, created_at, limits) "
                        "VALUES ($1, $2, $3, $4) RETURNING id", &p, &res);
        }
        if (r == -EEXIST)
                r = STORE_E_CONFLICT;
        if (r == 0 && ret_id)
                *ret_id = get_i64(res, 0, 0);
        PQclear(res);
        free(text);
        return r;
}

/**
 * store_pg_token_revoke() - see store_token_revoke()
 */
static int store_pg_token_revoke(void *be, const char *name)
{
        StorePg *store = be;
        Params p = { .n = 0 };
        int64_t n = 0;
        int r;

        if (!name)
                return -EINVAL;
        p_text(&p, name);
        p_double(&p, store_now());
        r = update_one(store, false, "token revoke", "UPDATE tokens SET revoked_at = $2 WHERE name = $1 "
                       "AND revoked_at IS NULL", &p, &n);
        if (r == 0 && n == 0)
                r = STORE_E_NOT_FOUND;
        return r;
}

/**
 * store_pg_token_lookup() - see store_token_lookup()
 */
static int store_pg_token_lookup(void *be, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits)
{
        StorePg *store = be;
        PGresult *res;
        Params p = { .n = 0 };
        json_t *limits = NULL;
        int r;

        r = ensure_conn(store);
        if (r < 0)
                return r;
        p_bytes(&p, hash, 32);
        r = runp(store, "token lookup", "SELECT id, limits FROM tokens WHERE hash = $1 AND revoked_at IS NULL", &p, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0) {
                r = STORE_E_NOT_FOUND;
        } else {
                limits = PQgetisnull(res, 0, 1) ? json_object() : get_json(res, 0, 1);
                if (!json_is_object(limits)) {
                        r = -EBADMSG;
                } else {
                        if (ret_id)
                                *ret_id = get_i64(res, 0, 0);
                        if (ret_limits) {
                                *ret_limits = limits;
                                limits = NULL;
                        }
                }
        }
        PQclear(res);
        json_decref(limits);
        return r;
}

/**
 * store_pg_token_list() - see store_token_list()
 */
static int store_pg_token_list(void *be, json_t **ret_list)
{
        StorePg *store = be;
        PGresult *res;
        json_t *list;
        int r = ensure_conn(store);

        if (r < 0)
                return r;
        r = run(store, "token list", "SELECT id, name, created_at, revoked_at, limits FROM tokens ORDER BY id", NULL,
                &res);
        if (r < 0)
                return r;
        list = json_array();
        for (int i = 0; list && i < PQntuples(res); i++) {
                StoreRow row = pg_row(res, i);
                json_t *o = store_row_token(&row);
                if (!o || json_array_append_new(list, o)) {
                        json_decref(list);
                        list = NULL;
                }
        }
        PQclear(res);
        if (!list)
                return -ENOMEM;
        *ret_list = list;
        return 0;
}

/**
 * store_pg_secret() - see store_secret(); one secret for the whole fleet
 */
static int store_pg_secret(void *be, uint8_t ret_secret[32])
{
        StorePg *store = be;
        PGresult *res;
        uint8_t *v = NULL;
        size_t len = 0;
        int r = ensure_conn(store);

        if (r < 0)
                return r;
        r = run(store, "read secret", "SELECT value FROM meta WHERE key = 'secret'", NULL, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                r = -EBADMSG;
        else
                r = get_bytes(res, 0, 0, &v, &len);
        if (r == 0 && len != 32)
                r = -EBADMSG;
        if (r == 0)
                memcpy(ret_secret, v, 32);
        free(v);
        PQclear(res);
        return r;
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
        char sql[160];
        int64_t n = 0;
        int r = tx_begin(store);

        if (r < 0)
                return r;
        r = scalar(store, "SELECT (SELECT count(*) FROM submissions) + (SELECT count(*) FROM tokens)", &n);
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
        if (r != 0)
                exec_simple(store, "ROLLBACK", "ROLLBACK");
        return r;
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
/* tx_begin() and tx_end() for store.c, which runs tx_ops in them. */
static int store_pg_tx_begin(void *be, bool lazy)
{
        return lazy ? tx_begin_async(be) : tx_begin(be);
}

static int store_pg_tx_end(void *be, int r)
{
        return tx_end(be, r);
}

const StoreOps store_pg_ops = {
        .tx = &tx_ops,
        .tx_begin = store_pg_tx_begin,
        .tx_end = store_pg_tx_end,
        .name = "postgresql",
        .claim_gate = true,
        .open = store_pg_open,
        .close = store_pg_close,
        .insert_request = store_pg_insert_request,
        .idem_get = store_pg_idem_get,
        .prune_idempotency = store_pg_prune_idempotency,
        .begin_group = store_pg_begin_group,
        .commit_group = store_pg_commit_group,
        .rollback_group = store_pg_rollback_group,
        .claim_next = store_pg_claim_next,
        .heartbeat = store_pg_heartbeat,
        .heartbeat_owner = store_pg_heartbeat_owner,
        .host_beat = store_pg_host_beat,
        .set_cache_key = store_pg_set_cache_key,
        .set_compiled = store_pg_set_compiled,
        .requeue = store_pg_requeue,
        .cancel = store_pg_cancel,
        .get_submission = store_pg_get_submission,
        .list_submissions = store_pg_list_submissions,
        .stats = store_pg_stats,
        .queue_depth = store_pg_queue_depth,
        .query_view = store_pg_query_view,
        .dashboard_rows = store_pg_dashboard_rows,
        .schema_version = store_pg_schema_version,
        .cache_put = store_pg_cache_put,
        .cache_prune = store_pg_cache_prune,
        .token_create = store_pg_token_create,
        .token_revoke = store_pg_token_revoke,
        .token_lookup = store_pg_token_lookup,
        .token_list = store_pg_token_list,
        .secret = store_pg_secret,
        .copy_begin = store_pg_copy_begin,
        .copy_row = store_pg_copy_row,
        .copy_end = store_pg_copy_end,
        .listen = store_pg_listen,
        .next_event = store_pg_next_event,
};
