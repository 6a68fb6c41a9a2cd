/*
 * store_sqlite - the store's SQLite backend: the queue and the history of
 * one host in one database file (store.h is the contract; server/store.c
 * calls the functions here through store_sqlite_ops at the end; docs/store.md).
 *
 * This is the only file that includes <sqlite3.h>; SQLite result codes are
 * translated into negative errnos here, and SQLite failures are logged here
 * once with SQLite's own message. Every statement is prepared once per
 * connection (SQLITE_PREPARE_PERSISTENT) and reset after use.
 *
 * Invariants: every write runs in BEGIN IMMEDIATE (so the write lock is taken
 * up front and the busy handler applies, never SQLITE_BUSY_SNAPSHOT); the
 * transactions that accept submissions run with synchronous=FULL and commit
 * before the caller is told the ids; the connection is otherwise at
 * synchronous=NORMAL. The aggregates (queue_counts, task_stats) are added to
 * by store_insert_request() once per request, and taken from by triggers
 * (migrations/) on every path to state 'done'.
 */
#include "server/store.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store_backend.h"

/* Generated from the migrations/ files by tools/bin2c (server/meson.build). */
extern const struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} kevald_migrations[];
extern const unsigned long kevald_migrations_count;

#define STORE_BUSY_TIMEOUT_MS 10000

enum {
        Q_BEGIN,
        Q_COMMIT,
        Q_ROLLBACK,
        Q_SAVEPOINT,
        Q_RELEASE,
        Q_ROLLBACK_TO,
        Q_SYNC_FULL,
        Q_SYNC_NORMAL,
        Q_COUNT_ACTIVE,
        Q_ADD_ACTIVE,
        Q_ADD_TASK,
        Q_IDEM_GET,
        Q_IDEM_PUT,
        Q_INSERT_SUB,
        Q_INSERT_REQ,
        Q_CLAIM_COMPILE,
        Q_CLAIM_RUN,
        Q_SERVED_COMPILE,
        Q_SERVED_RUN,
        Q_ANY_WAITING,
        Q_GET_REQ,
        Q_GET_COMPILE,
        Q_HEARTBEAT,
        Q_HEARTBEAT_OWNER,
        Q_SET_KEY,
        Q_SET_COMPILED,
        Q_PUT_COMPILE,
        Q_FINISH,
        Q_PUT_RESULT,
        Q_REQUEUE,
        Q_EXISTS,
        Q_EXPIRED,
        Q_BACK_ONE,
        Q_CANCEL,
        Q_GET_SUB,
        Q_CACHE_GET,
        Q_CACHE_HIT,
        Q_COUNTER_ADD,
        Q_CACHE_PUT,
        Q_TOKEN_LOOKUP,
        Q_DASH_FIRST,                   /* STORE_DASH_* follow in order */
        Q__MAX = Q_DASH_FIRST + STORE_DASH__COUNT
};

/*
 * Claim the next job waiting in state FROM, moving it to TO. Highest
 * priority first; within it, round robin between tokens (the one this stage
 * served longest ago, token_service.SERVED), oldest job first. The tokens
 * with waiting work are enumerated by a skip-scan of the index (state,
 * priority, token_id, id): a claim costs O(tokens x log n), not a pass over
 * every waiting row.
 */
#define CLAIM_SQL(TO, FROM, SERVED)                                                                           \
        "UPDATE submissions SET state = '" TO "', lease_owner = ?1, lease_expires = ?2, "                    \
        "attempts = attempts + 1, stage_attempts = stage_attempts + 1, "                                      \
        "started_at = coalesce(started_at, ?3) "                                                              \
        "WHERE id = (WITH RECURSIVE p(pri) AS (SELECT max(priority) FROM submissions WHERE state = '" FROM "'), " \
        "t(tok) AS (SELECT (SELECT min(token_id) FROM submissions WHERE state = '" FROM "' "                 \
        "AND priority = (SELECT pri FROM p)) UNION ALL SELECT (SELECT min(token_id) FROM submissions "         \
        "WHERE state = '" FROM "' AND priority = (SELECT pri FROM p) AND token_id > t.tok) FROM t "            \
        "WHERE t.tok IS NOT NULL) SELECT (SELECT min(id) FROM submissions WHERE state = '" FROM "' "          \
        "AND priority = (SELECT pri FROM p) AND token_id = t.tok) AS id FROM t "                              \
        "LEFT JOIN token_service ts ON ts.token_id = t.tok WHERE t.tok IS NOT NULL "                          \
        "ORDER BY coalesce(ts." SERVED ", 0), id LIMIT 1) "                                                   \
        "RETURNING id, stage_attempts, priority, token_id, task, mode, cache_key"

static const char *const queries[Q__MAX] = {
        [Q_BEGIN] = "BEGIN IMMEDIATE",
        [Q_COMMIT] = "COMMIT",
        [Q_ROLLBACK] = "ROLLBACK",
        [Q_SAVEPOINT] = "SAVEPOINT store_ins",
        [Q_RELEASE] = "RELEASE store_ins",
        [Q_ROLLBACK_TO] = "ROLLBACK TO store_ins",
        [Q_SYNC_FULL] = "PRAGMA synchronous=FULL",
        [Q_SYNC_NORMAL] = "PRAGMA synchronous=NORMAL",
        [Q_COUNT_ACTIVE] = "SELECT coalesce((SELECT active FROM queue_counts WHERE token_id = ?1), 0)",
        [Q_ADD_ACTIVE] = "INSERT INTO queue_counts(token_id, active) VALUES (?1, ?2) "
                          "ON CONFLICT(token_id) DO UPDATE SET active = active + excluded.active",
        [Q_ADD_TASK] = "INSERT INTO task_stats(task, submissions) VALUES (coalesce(?1, ''), ?2) "
                       "ON CONFLICT(task) DO UPDATE SET submissions = submissions + excluded.submissions",
        [Q_IDEM_GET] = "SELECT body_sha256, ids FROM idempotency WHERE token_id = ?1 AND key = ?2",
        [Q_IDEM_PUT] = "INSERT INTO idempotency(token_id, key, body_sha256, ids, created_at) "
                       "VALUES (?1, ?2, ?3, ?4, ?5)",
        [Q_INSERT_SUB] = "INSERT INTO submissions(state, task, mode, priority, token_id, run_id, "
                         "created_at, tags) VALUES ('queued', ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        [Q_INSERT_REQ] = "INSERT INTO submission_requests(id, request) VALUES (?1, ?2)",
        [Q_CLAIM_COMPILE] = CLAIM_SQL("compiling", "queued", "compile_at"),
        [Q_CLAIM_RUN] = CLAIM_SQL("running", "compiled", "run_at"),
        [Q_SERVED_COMPILE] = "INSERT INTO token_service(token_id, compile_at) VALUES (?1, ?2) "
                             "ON CONFLICT(token_id) DO UPDATE SET compile_at = excluded.compile_at",
        [Q_SERVED_RUN] = "INSERT INTO token_service(token_id, run_at) VALUES (?1, ?2) "
                         "ON CONFLICT(token_id) DO UPDATE SET run_at = excluded.run_at",
        [Q_ANY_WAITING] = "SELECT EXISTS (SELECT 1 FROM submissions WHERE state = ?1)",
        [Q_GET_REQ] = "SELECT request FROM submission_requests WHERE id = ?1",
        [Q_GET_COMPILE] = "SELECT compile FROM submission_compiles WHERE id = ?1",
        [Q_HEARTBEAT] = "UPDATE submissions SET lease_expires = ?3 WHERE id = ?1 AND lease_owner = ?2 "
                        "AND state IN ('compiling', 'running')",
        [Q_HEARTBEAT_OWNER] = "UPDATE submissions SET lease_expires = ?2 WHERE lease_owner = ?1 "
                              "AND state IN ('compiling', 'running')",
        [Q_SET_KEY] = "UPDATE submissions SET cache_key = ?2 WHERE id = ?1",
        [Q_SET_COMPILED] = "UPDATE submissions SET state = 'compiled', lease_owner = NULL, "
                           "lease_expires = NULL, stage_attempts = 0 "
                           "WHERE id = ?1 AND state = 'compiling' AND (?2 IS NULL OR lease_owner = ?2)",
        [Q_PUT_COMPILE] = "INSERT OR REPLACE INTO submission_compiles(id, compile) VALUES (?1, ?2)",
        [Q_FINISH] = "UPDATE submissions SET state = 'done', verdict = ?2, speedup = ?3, finished_at = ?4, "
                     "lease_owner = NULL, lease_expires = NULL "
                     "WHERE id = ?1 AND state != 'done' AND (?5 IS NULL OR (lease_owner = ?5 "
                     "AND state IN ('compiling', 'running')))",
        [Q_PUT_RESULT] = "INSERT OR REPLACE INTO submission_results(id, result) VALUES (?1, ?2)",
        [Q_REQUEUE] = "UPDATE submissions SET state = ?3, lease_owner = NULL, lease_expires = NULL "
                      "WHERE id = ?1 AND lease_owner = ?2 AND state = ?4",
        [Q_EXISTS] = "SELECT state, token_id FROM submissions WHERE id = ?1",
        [Q_EXPIRED] = "SELECT id, state, stage_attempts, task FROM submissions "
                      "WHERE state IN ('compiling', 'running') AND (?1 IS NULL OR lease_expires < ?1)",
        [Q_BACK_ONE] = "UPDATE submissions SET state = CASE state WHEN 'compiling' THEN 'queued' "
                       "ELSE 'compiled' END, lease_owner = NULL, lease_expires = NULL "
                       "WHERE id = ?1 AND state IN ('compiling', 'running')",
        [Q_CANCEL] = "UPDATE submissions SET state = 'done', verdict = 'cancelled', finished_at = ?3 "
                     "WHERE id = ?1 AND state IN ('queued', 'compiled') AND (?2 = 0 OR token_id = ?2) RETURNING task",
        [Q_GET_SUB] = "SELECT s.id, s.state, s.verdict, s.task, s.mode, s.priority, s.created_at, "
                      "s.started_at, s.finished_at, s.attempts, s.speedup, s.tags, r.result "
                      "FROM submissions s LEFT JOIN submission_results r ON r.id = s.id "
                      "WHERE s.id = ?1",
        [Q_CACHE_GET] = "SELECT compile, cubin FROM compile_cache WHERE key = ?1",
        [Q_CACHE_HIT] = "UPDATE compile_cache SET hits = hits + 1, last_used_at = ?2 WHERE key = ?1",
        [Q_COUNTER_ADD] = "UPDATE counters SET value = value + ?2 WHERE name = ?1",
        [Q_CACHE_PUT] = "INSERT INTO compile_cache(key, compile, cubin, hits, created_at, last_used_at) "
                        "VALUES (?1, ?2, ?3, 0, ?4, ?4) ON CONFLICT(key) DO UPDATE SET "
                        "compile = excluded.compile, cubin = excluded.cubin, last_used_at = excluded.last_used_at",
        [Q_TOKEN_LOOKUP] = "SELECT id, limits FROM tokens WHERE hash = ?1 AND revoked_at IS NULL",
        /* Dashboards: over the views of migrations/006_dashboard.sql (docs/dashboard.md). */
        /* The IN list walks the queue index per state; the view's "state != 'done'" alone would scan every done row. */
        [Q_DASH_FIRST + STORE_DASH_QUEUE] = "SELECT state, jobs, oldest_created_at FROM v_queue_depth "
                "WHERE state IN ('queued', 'compiling', 'compiled', 'running')",
        [Q_DASH_FIRST + STORE_DASH_ACTIVITY] = "SELECT minute_start, verdict, n, latency_sum_s, compiles, "
                "compile_ms_sum, cache_hits, cache_misses FROM v_activity_minutely WHERE minute_start >= ?1 "
                "ORDER BY minute_start",
        [Q_DASH_FIRST + STORE_DASH_GPU_BUSY] = "SELECT minute_start, gpu, jobs, busy_ms, busy_fraction "
                "FROM v_gpu_busy_minutely WHERE minute_start >= ?1 ORDER BY minute_start, gpu",
        [Q_DASH_FIRST + STORE_DASH_RUNS] = "SELECT * FROM v_run_summary WHERE ?1 IS NULL OR instr(run_id, ?1) > 0 "
                "ORDER BY last_finished_at DESC, run_id LIMIT ?2 OFFSET ?3",
        [Q_DASH_FIRST + STORE_DASH_RUN] = "SELECT * FROM v_run_summary WHERE run_id = ?1",
        [Q_DASH_FIRST + STORE_DASH_RUN_STEPS] = "SELECT * FROM v_run_steps WHERE run_id = ?1 "
                "AND coalesce(step, -1) BETWEEN ?2 AND ?3 ORDER BY coalesce(step, -1)",
        [Q_DASH_FIRST + STORE_DASH_RUN_SPEEDUPS] = "SELECT step, bucket, speedup_lo, speedup_hi, n "
                "FROM v_run_step_speedups WHERE run_id = ?1 AND coalesce(step, -1) BETWEEN ?2 AND ?3 "
                "ORDER BY coalesce(step, -1), bucket",
        /* best_id and best_step are bare columns: SQLite takes them from the row with max(best_speedup). */
        [Q_DASH_FIRST + STORE_DASH_RUN_TASKS] = "SELECT task, sum(evaluated) AS samples, sum(compiled) AS compiled, "
                "sum(correct) AS correct, max(best_speedup) AS best_speedup, best_id, step AS best_step, "
                "sum(checked) AS checked "
                "FROM v_run_step_tasks WHERE run_id = ?1 AND coalesce(step, -1) BETWEEN ?2 AND ?3 "
                "GROUP BY task ORDER BY task",
        [Q_DASH_FIRST + STORE_DASH_TASKS] = "SELECT * FROM v_task_summary WHERE ?1 IS NULL OR instr(task, ?1) > 0 "
                "ORDER BY submissions DESC, task LIMIT ?2 OFFSET ?3",
        [Q_DASH_FIRST + STORE_DASH_TASK] = "SELECT * FROM v_task_summary WHERE task = ?1",
        [Q_DASH_FIRST + STORE_DASH_TASK_VERDICTS] = "SELECT verdict, n FROM v_task_verdicts WHERE task = ?1 "
                "ORDER BY n DESC, verdict",
        [Q_DASH_FIRST + STORE_DASH_TASK_SPEEDUPS] = "SELECT bucket, speedup_lo, speedup_hi, n "
                "FROM v_task_speedup_hist WHERE task = ?1 ORDER BY bucket",
        [Q_DASH_FIRST + STORE_DASH_LEADERBOARD] = "SELECT id, speedup, run_id, step, sample, turn, finished_at "
                "FROM v_task_leaderboard WHERE task = ?1 ORDER BY speedup DESC, id LIMIT ?2 OFFSET ?3",
        [Q_DASH_FIRST + STORE_DASH_TURN] = "SELECT id, parent, turn, run_id, step, sample, task, state, verdict, "
                "speedup, token_id, created_at FROM v_submission_turns WHERE id = ?1",
        [Q_DASH_FIRST + STORE_DASH_CHILDREN] = "SELECT id, parent, turn, run_id, step, sample, task, state, verdict, "
                "speedup, token_id, created_at FROM v_submission_turns WHERE parent = ?1 "
                "AND (?2 < 0 OR token_id = ?2) ORDER BY id LIMIT ?3",
        [Q_DASH_FIRST + STORE_DASH_REQUEST] = "SELECT request FROM submission_requests WHERE id = ?1",
        [Q_DASH_FIRST + STORE_DASH_HISTOGRAMS] = "SELECT metric, label, le, n, count, sum FROM v_metric_histograms "
                "ORDER BY metric, label, le IS NULL, le",
        /* Migration 007: the verdict mix per step; the task browser's figures for a page of library names. */
        [Q_DASH_FIRST + STORE_DASH_RUN_VERDICTS] = "SELECT step, verdict, n FROM v_run_step_verdicts "
                "WHERE run_id = ?1 AND coalesce(step, -1) BETWEEN ?2 AND ?3 ORDER BY coalesce(step, -1), verdict",
        [Q_DASH_FIRST + STORE_DASH_TASKS_NAMED] = "SELECT * FROM v_task_summary "
                "WHERE task IN (SELECT value FROM json_each(?1))",
        [Q_DASH_FIRST + STORE_DASH_REFERENCES] = "SELECT * FROM v_task_reference_times "
                "WHERE task IN (SELECT value FROM json_each(?1)) ORDER BY task, gpu_name, shape",
};

typedef struct StoreSqlite StoreSqlite;

struct StoreSqlite {
        sqlite3 *db;
        sqlite3_stmt *stmts[Q__MAX];
        bool in_group;          /* between store_begin_group() and its commit/rollback */
        bool group_lost;        /* SQLite rolled the group's transaction back by itself */
        bool write_locked;      /* holds write_mutex: between BEGIN IMMEDIATE and its end */
        double busy_since;      /* busy handler: when the current wait began */
};

/*
 * Writers of this process take turns on a mutex before BEGIN IMMEDIATE: a
 * blocked thread is woken the moment the lock is free, where SQLite's busy
 * handler would poll with growing sleeps (measured: claims stalled up to
 * 0.5 s behind a busy ingest writer). Other processes still meet the busy
 * handler below. No thread ever holds two write transactions.
 */
static pthread_mutex_t write_mutex = PTHREAD_MUTEX_INITIALIZER;

/* ---- helpers ------------------------------------------------------------ */

static int errno_from_sqlite(int rc)
{
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
        case SQLITE_FORMAT:
                return -EBADMSG;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_MISUSE:
        case SQLITE_RANGE:
                return -EINVAL;
        case SQLITE_IOERR:
        case SQLITE_PROTOCOL:
                return -EIO;    /* the storage failed (a storage fault: 503, /readyz read-only) */
        default:
                return -EPROTO; /* SQLITE_ERROR and the like: a bug or a bad statement, not the storage */
        }
}

/* A failing SQLite code as a negative errno, never 0. */
static int err_or_eio(int rc)
{
        int r = errno_from_sqlite(rc);
        return r != 0 ? r : -EIO;
}

static int fail(StoreSqlite *s, int rc, const char *what)
{
        log_error("store: %s failed: %s", what, s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        return err_or_eio(rc);
}

/* Borrow the prepared statement @q, reset and unbound. */
static int stmt_get(StoreSqlite *s, int q, sqlite3_stmt **ret_stmt)
{
        *ret_stmt = NULL; /* on failure too: callers' stmt_done() accepts NULL */
        if (!s->stmts[q]) {
                int rc = sqlite3_prepare_v3(s->db, queries[q], -1, SQLITE_PREPARE_PERSISTENT,
                                            &s->stmts[q], NULL);
                if (rc != SQLITE_OK)
                        return fail(s, rc, queries[q]);
        }
        *ret_stmt = s->stmts[q];
        return 0;
}

static void stmt_done(sqlite3_stmt *st)
{
        if (st) {
                sqlite3_reset(st);
                sqlite3_clear_bindings(st);
        }
}

/* Run a cached statement that returns no rows. */
static int run_q(StoreSqlite *s, int q)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, q, &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        stmt_done(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return fail(s, rc, queries[q]);
        return 0;
}

/* Step a bound statement to completion; its rows (if any) are ignored. */
static int step_done(StoreSqlite *s, sqlite3_stmt *st, const char *what)
{
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ;
        if (rc != SQLITE_DONE)
                return fail(s, rc, what);
        return 0;
}

static int exec_sql(StoreSqlite *s, const char *sql)
{
        char *msg = NULL;
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
        if (rc != SQLITE_OK) {
                log_error("store: %.60s failed: %s", sql, msg ? msg : sqlite3_errstr(rc));
                sqlite3_free(msg);
                return err_or_eio(rc);
        }
        return 0;
}

static void write_release(StoreSqlite *s)
{
        if (s->write_locked) {
                s->write_locked = false;
                pthread_mutex_unlock(&write_mutex);
        }
}

/* BEGIN IMMEDIATE, after this process's other writers. */
static int begin_write(StoreSqlite *s)
{
        int r;

        pthread_mutex_lock(&write_mutex);
        s->write_locked = true;
        r = run_q(s, Q_BEGIN);
        if (r < 0)
                write_release(s);
        return r;
}

static int tx_begin(StoreSqlite *s)
{
        if (s->in_group)
                return -EINVAL; /* the group's transaction is open; only inserts may join it */
        return begin_write(s);
}

/* End the transaction: commit when @r is 0, roll back otherwise. Returns @r or the commit's error. */
static int tx_end(StoreSqlite *s, int r)
{
        if (sqlite3_get_autocommit(s->db)) {
                write_release(s);
                return r != 0 ? r : -EIO; /* SQLite already rolled back (I/O error, full disk) */
        }
        if (r == 0)
                r = run_q(s, Q_COMMIT);
        if (r != 0 && !sqlite3_get_autocommit(s->db))
                run_q(s, Q_ROLLBACK);
        write_release(s);
        return r;
}

/* Cross-process lock waits: short sleeps up to STORE_BUSY_TIMEOUT_MS. */
static int busy_wait(void *arg, int count)
{
        StoreSqlite *s = arg;
        struct timespec ts;
        double now;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        if (count == 0)
                s->busy_since = now;
        if ((now - s->busy_since) * 1000.0 > STORE_BUSY_TIMEOUT_MS)
                return 0;
        ts.tv_sec = 0;
        ts.tv_nsec = count < 20 ? 100000 : 1000000;
        nanosleep(&ts, NULL);
        return 1;
}

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
        const unsigned char *v = sqlite3_column_text(st, i);
        return v ? strdup((const char *)v) : NULL;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
        const char *v = (const char *)sqlite3_column_text(st, i);
        if (!v)
                return NULL;
        return json_loadb(v, (size_t)sqlite3_column_bytes(st, i), JSON_DECODE_ANY, NULL);
}

/* A statement's current row as store_rules.c reads it (StoreRow). */
static bool sq_is_null(const StoreRow *row, int col)
{
        return sqlite3_column_type(row->res, col) == SQLITE_NULL;
}

static int64_t sq_i64(const StoreRow *row, int col)
{
        return sqlite3_column_int64(row->res, col);
}

static double sq_real(const StoreRow *row, int col)
{
        return sqlite3_column_double(row->res, col);
}

static const char *sq_text(const StoreRow *row, int col, size_t *ret_len)
{
        const char *v = (const char *)sqlite3_column_text(row->res, col);
        if (ret_len)
                *ret_len = v ? (size_t)sqlite3_column_bytes(row->res, col) : 0;
        return v;
}

static StoreRow sq_row(sqlite3_stmt *st)
{
        return (StoreRow){ .res = st, .is_null = sq_is_null, .i64 = sq_i64, .real = sq_real, .text = sq_text };
}

static json_t *col_real_or_null(sqlite3_stmt *st, int i)
{
        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return json_null();
        return json_real(sqlite3_column_double(st, i));
}

static json_t *col_text_or_null(sqlite3_stmt *st, int i)
{
        const char *v = (const char *)sqlite3_column_text(st, i);
        return v ? json_string(v) : json_null();
}

/* ---- open, migrations --------------------------------------------------- */

static int user_version(StoreSqlite *s, int *ret_v)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return fail(s, rc, "PRAGMA user_version");
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_finalize(st);
                return fail(s, rc, "PRAGMA user_version");
        }
        *ret_v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return 0;
}

static int migrate(StoreSqlite *s, const char *path)
{
        int known = 0, current, r;
        char sql[64];

        for (unsigned long i = 0; i < kevald_migrations_count; i++) {
                int v = store_migration_number(kevald_migrations[i].name);
                if (v <= known) {
                        log_error("store: migration \"%s\" is misnumbered", kevald_migrations[i].name);
                        return -EINVAL;
                }
                known = v;
        }
        r = user_version(s, &current);
        if (r < 0)
                return r;
        if (current == known)
                return 0; /* the common case: no write lock taken */
        if (current > known)
                goto newer;

        r = begin_write(s);
        if (r < 0)
                return r;
        r = user_version(s, &current); /* another connection may have migrated meanwhile */
        if (r < 0)
                goto out;
        if (current > known) {
                r = STORE_E_NEWER_DB;
                goto out;
        }
        for (unsigned long i = 0; i < kevald_migrations_count; i++) {
                int v = store_migration_number(kevald_migrations[i].name);
                if (v <= current)
                        continue;
                log_info("store: applying migration %s to \"%s\"", kevald_migrations[i].name, path);
                r = exec_sql(s, (const char *)kevald_migrations[i].data);
                if (r < 0)
                        goto out;
                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
                r = exec_sql(s, sql);
                if (r < 0)
                        goto out;
        }
out:
        r = tx_end(s, r);
        if (r != STORE_E_NEWER_DB)
                return r;
newer:
        log_error("store: database \"%s\" has schema version %d, newer than this kevald knows (%d); "
                  "refusing to open it: upgrade kevald", path, current, known);
        return STORE_E_NEWER_DB;
}

static int ensure_secret(StoreSqlite *s)
{
        uint8_t secret[32];
        sqlite3_stmt *st = NULL;
        size_t got = 0;
        int r, rc;

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
        r = tx_begin(s);
        if (r < 0)
                return r;
        rc = sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO meta(key, value) VALUES ('secret', ?1)", -1,
                                &st, NULL);
        if (rc != SQLITE_OK) {
                r = fail(s, rc, "prepare secret");
                goto out;
        }
        sqlite3_bind_blob(st, 1, secret, sizeof(secret), SQLITE_STATIC);
        r = step_done(s, st, "insert secret");
out:
        sqlite3_finalize(st);
        return tx_end(s, r);
}

/**
 * store_sqlite_close() - finalize every statement and close the connection
 * @store: the store, or NULL
 */
static void store_sqlite_close(void *be)
{
        StoreSqlite *store = be;

        if (!store)
                return;
        write_release(store); /* closed mid-transaction: SQLite rolls back */
        for (int i = 0; i < Q__MAX; i++)
                sqlite3_finalize(store->stmts[i]);
        sqlite3_close_v2(store->db);
        free(store);
}

/**
 * store_sqlite_open() - open (creating if needed) the database and bring its schema up to date
 * @path:      database file; created with its WAL files next to it
 * @ret_be:    on success, a new StoreSqlite (store_sqlite_close())
 *
 * Sets WAL, busy_timeout and synchronous=NORMAL, applies the embedded
 * migrations newer than PRAGMA user_version in one transaction, and creates
 * the server secret on first use.
 *
 * Return: 0, STORE_E_NEWER_DB when the database's schema is newer than this
 * binary (logged), or a negative errno.
 */
static int store_sqlite_open(const char *path, void **ret_be)
{
        StoreSqlite *s = calloc(1, sizeof(*s));
        int r, rc;

        if (!s)
                return -ENOMEM;
        rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc != SQLITE_OK) {
                log_error("store: cannot open \"%s\": %s", path,
                          s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
                r = err_or_eio(rc);
                goto out;
        }
        sqlite3_extended_result_codes(s->db, 1);
        sqlite3_busy_handler(s->db, busy_wait, s);
        r = exec_sql(s, "PRAGMA journal_mode=WAL");
        if (r < 0)
                goto out;
        /* journal_size_limit: truncate the WAL back to 64 MiB after a checkpoint that emptied it. */
        r = exec_sql(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY; "
                        "PRAGMA journal_size_limit=67108864");
        if (r < 0)
                goto out;
        r = migrate(s, path);
        if (r != 0)
                goto out;
        r = ensure_secret(s);
        if (r < 0)
                goto out;
        *ret_be = s;
        s = NULL;
out:
        store_sqlite_close(s);
        return r;
}

/**
 * store_sqlite_open_readonly() - open an existing kevald SQLite store for reading only
 * @path:      the file; never created, never migrated, never written
 * @ret_be:    on success, a new StoreSqlite (store_sqlite_close())
 *
 * For `kevald store copy`: a missing file or one that is not a kevald store
 * must be refused, not created or taken for an empty store.
 *
 * Return: 0; -ENOENT when @path does not exist; -EBADMSG when it is not a
 * SQLite database or not a kevald store (no schema version, no submissions
 * table); STORE_E_NEWER_DB when its schema is newer than this binary; or a
 * negative errno.
 */
static int store_sqlite_open_readonly(const char *path, void **ret_be)
{
        StoreSqlite *s = calloc(1, sizeof(*s));
        sqlite3_stmt *st = NULL;
        int r, rc, version = 0, known = 0;

        if (!s)
                return -ENOMEM;
        rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK) {
                r = (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : err_or_eio(rc);
                goto out;
        }
        sqlite3_extended_result_codes(s->db, 1);
        sqlite3_busy_handler(s->db, busy_wait, s);
        r = user_version(s, &version); /* the first read: a file that is no database fails here */
        if (r < 0)
                goto out;
        for (unsigned long i = 0; i < kevald_migrations_count; i++)
                known = store_migration_number(kevald_migrations[i].name);
        if (version > known) {
                r = STORE_E_NEWER_DB;
                goto out;
        }
        rc = sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'submissions'",
                                -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = err_or_eio(rc);
                goto out;
        }
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                r = err_or_eio(rc);
                goto out;
        }
        if (version < 1 || rc != SQLITE_ROW) {
                r = -EBADMSG;
                goto out;
        }
        *ret_be = s;
        s = NULL;
        r = 0;
out:
        sqlite3_finalize(st);
        store_sqlite_close(s);
        return r;
}

/* ---- acceptance --------------------------------------------------------- */

static int count_active(StoreSqlite *s, int64_t token_id, int64_t *ret_n)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_COUNT_ACTIVE, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, token_id);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                r = fail(s, rc, "count queued");
        } else {
                *ret_n = sqlite3_column_int64(st, 0);
        }
        stmt_done(st);
        return r;
}

/* 0 with ids (replay), STORE_E_NOT_FOUND (new key), STORE_E_CONFLICT (other body), or -errno. */
static int idem_get(void *be, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                    int64_t **ret_ids, size_t *ret_n)
{
        StoreSqlite *s = be;
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_IDEM_GET, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, token_id);
        bind_text(st, 2, key);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                r = STORE_E_NOT_FOUND;
        } else if (rc != SQLITE_ROW) {
                r = fail(s, rc, "idempotency lookup");
        } else if (sqlite3_column_bytes(st, 0) != 32 || memcmp(sqlite3_column_blob(st, 0), hash, 32) != 0) {
                r = STORE_E_CONFLICT;
        } else {
                r = store_ids_decode((const char *)sqlite3_column_text(st, 1), max, ret_ids, ret_n);
        }
        stmt_done(st);
        return r;
}

static int insert_one(StoreSqlite *s, const StoreNew *sn, double now, int64_t *ret_id)
{
        sqlite3_stmt *st;
        json_t *tags = json_object_get(sn->request, "tags");
        const char *run_id = json_string_value(json_object_get(tags, "run_id"));
        char *tags_text = NULL, *req_text = NULL;
        const char *req = sn->request_json;
        int64_t id;
        int r;

        if (json_is_object(tags)) {
                tags_text = json_dumps(tags, JSON_COMPACT);
                if (!tags_text)
                        return -ENOMEM;
        }
        if (!req) {
                req_text = json_dumps(sn->request, JSON_COMPACT);
                if (!req_text) {
                        r = -ENOMEM;
                        goto out;
                }
                req = req_text;
        }
        r = stmt_get(s, Q_INSERT_SUB, &st);
        if (r < 0)
                goto out;
        bind_text(st, 1, sn->task);
        bind_text(st, 2, sn->mode);
        sqlite3_bind_int(st, 3, sn->priority);
        sqlite3_bind_int64(st, 4, sn->token_id);
        bind_text(st, 5, run_id);
        sqlite3_bind_double(st, 6, now);
        bind_text(st, 7, tags_text);
        r = step_done(s, st, "insert submission");
        stmt_done(st);
        if (r < 0)
                goto out;
        id = sqlite3_last_insert_rowid(s->db);
        r = stmt_get(s, Q_INSERT_REQ, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, req, -1, SQLITE_STATIC);
        r = step_done(s, st, "insert request");
        stmt_done(st);
        if (r < 0)
                goto out;
        *ret_id = id;
out:
        free(tags_text);
        free(req_text);
        return r;
}

static int add_count(StoreSqlite *s, int q, int64_t token_id, const char *task, int64_t n)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, q, &st);
        if (r < 0)
                return r;
        if (q == Q_ADD_ACTIVE)
                sqlite3_bind_int64(st, 1, token_id);
        else
                bind_text(st, 1, task);
        sqlite3_bind_int64(st, 2, n);
        r = step_done(s, st, "count submissions");
        stmt_done(st);
        return r;
}

static int add_active(void *be, int64_t token_id, int64_t n)
{
        return add_count(be, Q_ADD_ACTIVE, token_id, NULL, n);
}

static int add_task(void *be, const char *task, int64_t n)
{
        return add_count(be, Q_ADD_TASK, 0, task, n);
}

static int finish_in_tx(void *be, int64_t id, const char *owner, const char *verdict, double speedup,
                        const char *result_text);
static int back_one(void *be, int64_t id);
static int store_sqlite_cache_get(void *be, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                              size_t *ret_cubin_len);
static int leases(void *be, double before, StoreLease **ret, size_t *ret_n);

/* What store_rules.c's acceptance and reaper rules do here. */
static const StoreTx tx_ops = {
        .add_active = add_active, .add_task = add_task, .finish = finish_in_tx, .back_one = back_one,
        .idem_get = idem_get, .leases = leases, .cache_get = store_sqlite_cache_get,
};

/* The body of an insert, inside a transaction or savepoint. */
static int insert_body(StoreSqlite *s, const StoreInsert *ins, int64_t *ids, bool *ret_replayed)
{
        int64_t token_id = ins->subs[0].token_id, active;
        double now = store_now();
        int r;

        r = store_idem_replay(&tx_ops, s, ins, ids, ret_replayed);
        if (r != 0 || *ret_replayed)
                return r;
        if (ins->max_queued_total > 0) {
                r = count_active(s, -1, &active);
                if (r < 0)
                        return r;
                if (active + store_insert_queued(ins) > ins->max_queued_total)
                        return STORE_E_FULL;
        }
        if (ins->max_queued_token > 0) {
                r = count_active(s, token_id, &active);
                if (r < 0)
                        return r;
                if (active + store_insert_queued(ins) > ins->max_queued_token)
                        return STORE_E_QUOTA;
        }
        for (size_t i = 0; i < ins->n; i++) {
                r = insert_one(s, &ins->subs[i], now, &ids[i]);
                if (r < 0)
                        return r;
        }
        r = store_count_inserted(&tx_ops, s, ins);
        if (r < 0)
                return r;
        r = store_finish_at_insert(&tx_ops, s, ins, ids);
        if (r < 0)
                return r;
        if (ins->idem_key) {
                sqlite3_stmt *st;
                char *text = store_ids_encode(ids, ins->n);
                if (!text)
                        return -ENOMEM;
                r = stmt_get(s, Q_IDEM_PUT, &st);
                if (r < 0) {
                        free(text);
                        return r;
                }
                sqlite3_bind_int64(st, 1, token_id);
                bind_text(st, 2, ins->idem_key);
                sqlite3_bind_blob(st, 3, ins->body_hash, 32, SQLITE_STATIC);
                sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
                sqlite3_bind_double(st, 5, now);
                r = step_done(s, st, "insert idempotency key");
                stmt_done(st);
                free(text);
                if (r < 0)
                        return r;
        }
        *ret_replayed = false;
        return 0;
}

/**
 * store_sqlite_insert_request() - accept one POST's submissions durably, or refuse them all
 * @store:        open store; borrowed
 * @ins:          the submissions, idempotency key and limits; borrowed
 * @ret_ids:      on success, the @ins->n ids (caller's array of @ins->n)
 * @ret_replayed: on success, true when the idempotency key was seen before with
 *                the same body and @ret_ids are the original ids (nothing inserted)
 *
 * Outside a group this runs in its own BEGIN IMMEDIATE transaction at
 * synchronous=FULL and returns after the commit. Inside a group
 * (store_begin_group()) it runs in a savepoint: its outcome is independent of
 * the other requests of the group, but nothing is durable before
 * store_commit_group() succeeds. The idempotency record is written in the
 * same transaction as the rows.
 *
 * Return: 0; STORE_E_CONFLICT when the key was used with another body;
 * STORE_E_FULL when the not-done total would exceed max_queued_total;
 * STORE_E_QUOTA when the token's would exceed max_queued_token; -EINVAL for
 * a bad argument (empty or over LIMIT_BATCH_MAX, bad mode, mixed tokens, key
 * too long or without a hash); -EIO when the group's transaction was lost;
 * another negative errno on a database failure.
 */
static int store_sqlite_insert_request(void *be, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed)
{
        StoreSqlite *store = be;
        bool nested = store->in_group, replayed = false;
        int64_t *ids = NULL;
        int r;

        if (nested && (store->group_lost || sqlite3_get_autocommit(store->db))) {
                store->group_lost = true;
                return -EIO;
        }
        ids = calloc(ins->n, sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        if (nested) {
                r = run_q(store, Q_SAVEPOINT);
        } else {
                r = run_q(store, Q_SYNC_FULL);
                if (r == 0)
                        r = begin_write(store);
        }
        if (r < 0)
                goto out_sync;

        r = insert_body(store, ins, ids, &replayed);

        if (nested) {
                if (sqlite3_get_autocommit(store->db)) {
                        store->group_lost = true;
                        r = r < 0 ? r : -EIO;
                        goto out_sync;
                }
                if (r != 0)
                        run_q(store, Q_ROLLBACK_TO);
                int r2 = run_q(store, Q_RELEASE);
                if (r == 0 && r2 < 0)
                        r = r2;
        } else {
                r = tx_end(store, r);
        }
out_sync:
        if (!nested)
                run_q(store, Q_SYNC_NORMAL);
        if (r == 0) {
                memcpy(ret_ids, ids, sizeof(*ids) * ins->n);
                if (ret_replayed)
                        *ret_replayed = replayed;
        }
        free(ids);
        return r;
}

/**
 * store_sqlite_prune_idempotency() - forget idempotency keys older than @older_than_s
 * @store:       open store; borrowed
 * @older_than_s: age in seconds (e.g. 86400)
 * @ret_deleted: on success, how many keys were dropped (may be NULL)
 * Return: 0 or a negative errno.
 */
static int store_sqlite_prune_idempotency(void *be, double older_than_s, int64_t *ret_deleted)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        int r = tx_begin(store), rc;

        if (r < 0)
                return r;
        rc = sqlite3_prepare_v2(store->db, "DELETE FROM idempotency WHERE created_at < ?1", -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = fail(store, rc, "prepare prune");
                goto out;
        }
        sqlite3_bind_double(st, 1, store_now() - older_than_s);
        r = step_done(store, st, "prune idempotency");
        if (r == 0 && ret_deleted)
                *ret_deleted = sqlite3_changes64(store->db);
out:
        sqlite3_finalize(st);
        return tx_end(store, r);
}

/**
 * store_sqlite_begin_group() - open a durable write transaction for several inserts
 * @store: open store, not already in a group; borrowed
 *
 * Sets synchronous=FULL and runs BEGIN IMMEDIATE. Until store_commit_group()
 * or store_rollback_group(), only store_insert_request() and
 * store_insert_submissions() may be called on this store (other writes
 * return -EINVAL).
 *
 * Return: 0, -EINVAL when a group is already open, or a negative errno.
 */
static int store_sqlite_begin_group(void *be)
{
        StoreSqlite *store = be;
        int r;

        if (store->in_group || !sqlite3_get_autocommit(store->db))
                return -EINVAL;
        r = run_q(store, Q_SYNC_FULL);
        if (r < 0)
                return r;
        r = begin_write(store);
        if (r < 0) {
                run_q(store, Q_SYNC_NORMAL);
                return r;
        }
        store->in_group = true;
        store->group_lost = false;
        return 0;
}

/**
 * store_sqlite_commit_group() - commit the group (one fsync of the WAL) and close it
 * @store: store with an open group; borrowed
 * Return: 0 when every insert of the group that returned 0 is durable;
 * -EINVAL without an open group; -EIO when SQLite lost the transaction;
 * another negative errno when the commit failed (nothing of the group is
 * stored then).
 */
static int store_sqlite_commit_group(void *be)
{
        StoreSqlite *store = be;
        int r;

        if (!store->in_group)
                return -EINVAL;
        store->in_group = false;
        if (store->group_lost || sqlite3_get_autocommit(store->db))
                r = -EIO;
        else
                r = run_q(store, Q_COMMIT);
        if (r < 0 && !sqlite3_get_autocommit(store->db))
                run_q(store, Q_ROLLBACK);
        write_release(store);
        run_q(store, Q_SYNC_NORMAL);
        store->group_lost = false;
        return r;
}

/**
 * store_sqlite_rollback_group() - drop everything the open group inserted
 * @store: store with an open group (no-op otherwise); borrowed
 */
static void store_sqlite_rollback_group(void *be)
{
        StoreSqlite *store = be;

        if (!store->in_group)
                return;
        store->in_group = false;
        store->group_lost = false;
        if (!sqlite3_get_autocommit(store->db))
                run_q(store, Q_ROLLBACK);
        write_release(store);
        run_q(store, Q_SYNC_NORMAL);
}

/* ---- queue -------------------------------------------------------------- */

static int load_side_json(StoreSqlite *s, int q, int64_t id, json_t **ret)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, q, &st), rc;
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                json_t *v = col_json(st, 0);
                if (!v)
                        r = -EBADMSG;
                else
                        *ret = v;
        } else if (rc == SQLITE_DONE) {
                *ret = NULL;
        } else {
                r = fail(s, rc, queries[q]);
        }
        stmt_done(st);
        return r;
}

/* STORE_E_NOT_FOUND when @id does not exist, else STORE_E_CONFLICT (or a negative errno). */
static int why_not(StoreSqlite *s, int64_t id, int64_t token_id)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_EXISTS, &st), rc;
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                r = token_id && sqlite3_column_int64(st, 1) != token_id ? STORE_E_NOT_FOUND : STORE_E_CONFLICT;
        else if (rc == SQLITE_DONE)
                r = STORE_E_NOT_FOUND;
        else
                r = fail(s, rc, "look up submission");
        stmt_done(st);
        return r;
}

/**
 * store_sqlite_claim_next() - take the next job for a stage: highest priority first, then
 * round robin between tokens (the token this stage served longest ago), then oldest
 * @store:   open store; borrowed
 * @stage:   STAGE_COMPILE (takes a queued job to compiling) or STAGE_RUN
 *           (takes a compiled job to running)
 * @owner:   lease owner recorded on the job (e.g. "host:pid"); borrowed
 * @lease_s: lease length in seconds (> 0)
 * @ret_job: on success, a new StoreJob (store_job_free()); attempts counts
 *           this claim; compile is set for STAGE_RUN when it was stored
 *
 * One UPDATE ... RETURNING in a BEGIN IMMEDIATE transaction: two connections
 * never claim the same job.
 *
 * Return: 0, STORE_E_EMPTY when nothing waits for the stage, -EINVAL, or a
 * negative errno (-EBADMSG when the stored request does not parse).
 */
static int store_sqlite_claim_next(void *be, Stage stage, const char *owner, double lease_s, StoreJob **ret_job)
{
        StoreSqlite *store = be;
        StoreJob *job = NULL;
        sqlite3_stmt *st;
        double now = store_now();
        int r, rc;

        /* Nothing waiting: answer without taking the write lock (a row that
         * appears right after comes with its own notify). */
        r = stmt_get(store, Q_ANY_WAITING, &st);
        if (r < 0)
                return r;
        bind_text(st, 1, stage == STAGE_COMPILE ? "queued" : "compiled");
        rc = sqlite3_step(st);
        bool any = rc == SQLITE_ROW && sqlite3_column_int(st, 0) != 0;
        stmt_done(st);
        if (rc != SQLITE_ROW)
                return fail(store, rc, "look for waiting jobs");
        if (!any)
                return STORE_E_EMPTY;
        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, stage == STAGE_COMPILE ? Q_CLAIM_COMPILE : Q_CLAIM_RUN, &st);
        if (r < 0)
                goto out;
        bind_text(st, 1, owner);
        sqlite3_bind_double(st, 2, now + lease_s);
        sqlite3_bind_double(st, 3, now);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                stmt_done(st);
                r = STORE_E_EMPTY;
                goto out;
        }
        if (rc != SQLITE_ROW) {
                stmt_done(st);
                r = fail(store, rc, "claim");
                goto out;
        }
        job = calloc(1, sizeof(*job));
        if (!job) {
                stmt_done(st);
                r = -ENOMEM;
                goto out;
        }
        job->id = sqlite3_column_int64(st, 0);
        job->attempts = sqlite3_column_int(st, 1);
        job->priority = sqlite3_column_int(st, 2);
        job->token_id = sqlite3_column_int64(st, 3);
        job->task = col_strdup(st, 4);
        job->mode = col_strdup(st, 5);
        if (sqlite3_column_bytes(st, 6) == 32) {
                memcpy(job->cache_key, sqlite3_column_blob(st, 6), 32);
                job->has_cache_key = true;
        }
        r = step_done(store, st, "claim");
        stmt_done(st);
        if (r < 0)
                goto out;
        r = stmt_get(store, stage == STAGE_COMPILE ? Q_SERVED_COMPILE : Q_SERVED_RUN, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, job->token_id);
        sqlite3_bind_double(st, 2, now);
        r = step_done(store, st, "record the token served");
        stmt_done(st);
        if (r < 0)
                goto out;
        if (!job->mode) {
                r = -ENOMEM;
                goto out;
        }
        r = load_side_json(store, Q_GET_REQ, job->id, &job->request);
        if (r == 0 && !job->request)
                r = -EBADMSG;
        if (r < 0)
                goto out;
        if (stage == STAGE_RUN) {
                r = load_side_json(store, Q_GET_COMPILE, job->id, &job->compile);
                if (r < 0)
                        goto out;
        }
out:
        r = tx_end(store, r);
        if (r == 0) {
                *ret_job = job;
                job = NULL;
        }
        store_job_free(job);
        return r;
}

/**
 * store_sqlite_heartbeat() - extend a job's lease
 * @store:   open store; borrowed
 * @id:      the job
 * @owner:   the lease owner
 * @lease_s: new lease length from now
 * Return: 0, STORE_E_NOT_FOUND for an unknown id, STORE_E_CONFLICT when the
 * lease is not held by @owner any more (reaped, finished), or a negative errno.
 */
static int store_sqlite_heartbeat(void *be, int64_t id, const char *owner, double lease_s)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r;

        if (!owner || !(lease_s > 0))
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, Q_HEARTBEAT, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        bind_text(st, 2, owner);
        sqlite3_bind_double(st, 3, store_now() + lease_s);
        r = step_done(store, st, "heartbeat");
        stmt_done(st);
        if (r == 0 && sqlite3_changes(store->db) == 0)
                r = why_not(store, id, 0);
out:
        return tx_end(store, r);
}

/**
 * store_sqlite_heartbeat_owner() - extend every lease held by @owner
 * @store:        open store; borrowed
 * @owner:        the lease owner
 * @lease_s:      new lease length from now
 * @ret_extended: on success, how many leases were extended (may be NULL)
 * Return: 0 or a negative errno.
 */
static int store_sqlite_heartbeat_owner(void *be, const char *owner, double lease_s, int *ret_extended)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r;

        if (!owner || !(lease_s > 0))
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, Q_HEARTBEAT_OWNER, &st);
        if (r < 0)
                goto out;
        bind_text(st, 1, owner);
        sqlite3_bind_double(st, 2, store_now() + lease_s);
        r = step_done(store, st, "heartbeat");
        stmt_done(st);
        if (r == 0 && ret_extended)
                *ret_extended = sqlite3_changes(store->db);
out:
        return tx_end(store, r);
}

/**
 * store_sqlite_set_cache_key() - record the compile cache key of a job
 * @store: open store; borrowed
 * @id:    the job
 * @key:   32 bytes; the run stage finds the CUBIN under it (StoreJob.cache_key)
 * Return: 0, STORE_E_NOT_FOUND, or a negative errno.
 */
static int store_sqlite_set_cache_key(void *be, int64_t id, const uint8_t key[32])
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r;

        if (!key)
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, Q_SET_KEY, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_blob(st, 2, key, 32, SQLITE_STATIC);
        r = step_done(store, st, "set cache key");
        stmt_done(st);
        if (r == 0 && sqlite3_changes(store->db) == 0)
                r = STORE_E_NOT_FOUND;
out:
        return tx_end(store, r);
}

/**
 * store_sqlite_set_compiled() - compiling -> compiled: store the compile section, release the lease
 * @store:           open store; borrowed
 * @id:              the job
 * @owner:           the lease owner, or NULL to skip the owner check
 * @compile_section: the result's "compile" object; borrowed; returned by the
 *                   run-stage claim as StoreJob.compile
 *
 * The stage's attempt count starts again from 0 for the run stage.
 *
 * Return: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT when the job is not
 * compiling under @owner's lease, or a negative errno.
 */
static int store_sqlite_set_compiled(void *be, int64_t id, const char *owner, const char *text)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r = tx_begin(store);

        if (r < 0)
                return r;
        r = stmt_get(store, Q_SET_COMPILED, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        bind_text(st, 2, owner);
        r = step_done(store, st, "set compiled");
        stmt_done(st);
        if (r == 0 && sqlite3_changes(store->db) == 0)
                r = why_not(store, id, 0);
        if (r != 0)
                goto out;
        r = stmt_get(store, Q_PUT_COMPILE, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        r = step_done(store, st, "store compile section");
        stmt_done(st);
out:
        return tx_end(store, r);
}

static int put_result(StoreSqlite *s, int64_t id, const char *text)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_PUT_RESULT, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        r = step_done(s, st, "store result");
        stmt_done(st);
        return r;
}

/* The finish itself, inside a transaction. */
static int finish_in_tx(void *be, int64_t id, const char *owner, const char *verdict, double speedup,
                        const char *result_text)
{
        StoreSqlite *s = be;
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_FINISH, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        bind_text(st, 2, verdict);
        if (isfinite(speedup) && speedup > 0)
                sqlite3_bind_double(st, 3, speedup);
        else
                sqlite3_bind_null(st, 3);
        sqlite3_bind_double(st, 4, store_now());
        bind_text(st, 5, owner);
        r = step_done(s, st, "finish");
        stmt_done(st);
        if (r == 0 && sqlite3_changes(s->db) == 0)
                r = why_not(s, id, 0);
        if (r != 0)
                return r;
        return put_result(s, id, result_text);
}

/**
 * store_sqlite_requeue() - give a claimed job back to its stage's queue
 * @store: open store; borrowed
 * @id:    the job
 * @owner: the lease owner
 * @stage: STAGE_COMPILE (compiling -> queued) or STAGE_RUN (running -> compiled)
 * The attempt stays counted.
 * Return: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT when the job is not in that
 * stage under @owner's lease, or a negative errno.
 */
static int store_sqlite_requeue(void *be, int64_t id, const char *owner, Stage stage)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r;

        if (!owner || (stage != STAGE_COMPILE && stage != STAGE_RUN))
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, Q_REQUEUE, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        bind_text(st, 2, owner);
        bind_text(st, 3, stage == STAGE_COMPILE ? "queued" : "compiled");
        bind_text(st, 4, stage == STAGE_COMPILE ? "compiling" : "running");
        r = step_done(store, st, "requeue");
        stmt_done(st);
        if (r == 0 && sqlite3_changes(store->db) == 0)
                r = why_not(store, id, 0);
out:
        return tx_end(store, r);
}

/* Expired (or, with @now NaN, all) leases: back one stage, or internal_error past @max_attempts. */
static int back_one(void *be, int64_t id)
{
        StoreSqlite *s = be;
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_BACK_ONE, &st);

        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        r = step_done(s, st, "requeue expired lease");
        stmt_done(st);
        return r;
}

/* StoreTx.leases: every lease (@before NaN: one host, all are its own) or those expired before @before. */
static int leases(void *be, double before, StoreLease **ret, size_t *ret_n)
{
        StoreSqlite *s = be;
        StoreLease *l = NULL;
        size_t n = 0, cap = 0;
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_EXPIRED, &st), rc;

        if (r < 0)
                return r;
        if (isnan(before))
                sqlite3_bind_null(st, 1);
        else
                sqlite3_bind_double(st, 1, before);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        StoreLease *nl = realloc(l, ncap * sizeof(*l));
                        if (!nl) {
                                r = -ENOMEM;
                                break;
                        }
                        l = nl;
                        cap = ncap;
                }
                l[n].id = sqlite3_column_int64(st, 0);
                snprintf(l[n].state, sizeof(l[n].state), "%s", sqlite3_column_text(st, 1));
                l[n].attempts = sqlite3_column_int(st, 2);
                l[n].task = col_strdup(st, 3);
                n++;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = fail(s, rc, "find expired leases");
        stmt_done(st);
        if (r < 0) {
                store_leases_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/**
 * store_sqlite_cancel() - cancel a submission that has not started running: queued, or
 *   compiled and waiting for a GPU (DELETE /v1/submissions/{id})
 * @store:    open store; borrowed
 * @id:       the submission
 * @token_id: the caller's token; 0 skips the ownership check (auth off, admin)
 * Ends the job with verdict cancelled and a result {"verdict": "cancelled"}.
 * Return: 0, STORE_E_NOT_FOUND (no such id, or another token's),
 * STORE_E_CONFLICT when it is not queued any more, or a negative errno.
 */
static int store_sqlite_cancel(void *be, int64_t id, int64_t token_id)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        char *task = NULL, *text = NULL;
        bool hit = false;
        int r, rc;

        r = tx_begin(store);
        if (r < 0)
                return r;
        r = stmt_get(store, Q_CANCEL, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, token_id);
        sqlite3_bind_double(st, 3, store_now());
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                hit = true;
                task = col_strdup(st, 0);
                r = step_done(store, st, "cancel");
        } else if (rc != SQLITE_DONE) {
                r = fail(store, rc, "cancel");
        }
        stmt_done(st);
        if (r < 0)
                goto out;
        if (!hit) {
                r = why_not(store, id, token_id);
                goto out;
        }
        json_t *res = json_pack("{s:s, s:s?, s:s}", "verdict", "cancelled", "task", task, "feedback",
                                "Cancelled before it ran (queued, or compiled and waiting for a GPU).");
        text = res ? json_dumps(res, JSON_COMPACT) : NULL;
        json_decref(res);
        if (!text) {
                r = -ENOMEM;
                goto out;
        }
        r = put_result(store, id, text);
out:
        free(task);
        free(text);
        return tx_end(store, r);
}

/* ---- reads -------------------------------------------------------------- */

/* Columns: id, state, verdict, task, mode, priority, created_at, started_at, finished_at,
 * attempts, speedup, tags [, result]. */
static json_t *row_to_object(sqlite3_stmt *st, bool with_result)
{
        StoreRow row = sq_row(st);
        return store_row_submission(&row, with_result);
}

/**
 * store_sqlite_get_submission() - the API object of one submission
 * @store:   open store; borrowed
 * @id:      the submission
 * @ret_obj: on success, a new object: id, state, verdict (null until done),
 *           task, mode, priority ("interactive"|"bulk"), created_at,
 *           started_at, finished_at (RFC 3339 or null), attempts, speedup
 *           (or null), tags, and result once done
 * Return: 0, STORE_E_NOT_FOUND, or a negative errno (-EBADMSG when stored JSON does not parse).
 */
static int store_sqlite_get_submission(void *be, int64_t id, json_t **ret_obj)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r = stmt_get(store, Q_GET_SUB, &st), rc;

        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                json_t *o = row_to_object(st, true);
                if (!o)
                        r = -EBADMSG;
                else
                        *ret_obj = o;
        } else if (rc == SQLITE_DONE) {
                r = STORE_E_NOT_FOUND;
        } else {
                r = fail(store, rc, "get submission");
        }
        stmt_done(st);
        return r;
}

/**
 * store_sqlite_list_submissions() - a page of submissions, newest first
 * @store, @filters, @cursor, @limit, @ret_items, @ret_next_cursor: see
 *   store_list_query_parse() (server/store_backend.h) and store.h
 * Return: 0, -EINVAL for a bad filter or limit, or a negative errno.
 */
static int store_sqlite_list_submissions(void *be, json_t *filters, int64_t cursor, int limit,
                                  json_t **ret_items, int64_t *ret_next_cursor)
{
        StoreSqlite *store = be;
        StoreListQuery q;
        char sql[1024];
        json_t *items = NULL;
        sqlite3_stmt *st = NULL;
        int64_t last = 0;
        size_t len, count = 0;
        int r, rc, bind = 1;

        r = store_list_query_parse(filters, cursor, limit, &q);
        if (r < 0)
                return r;
        len = (size_t)snprintf(sql, sizeof(sql),
                               "SELECT s.id, s.state, s.verdict, s.task, s.mode, s.priority, s.created_at, "
                               "s.started_at, s.finished_at, s.attempts, s.speedup, s.tags%s FROM submissions s%s "
                               "WHERE s.id < ?", q.with_result ? ", r.result" : "",
                               q.with_result ? " LEFT JOIN submission_results r ON r.id = s.id" : "");
        for (int i = 0; i < 4; i++) {
                /* Most rows are done: walk ids downwards rather than sort every done row. */
                bool unindexed = i == 2 && q.strs[i] && !strcmp(q.strs[i], "done");
                if (q.strs[i])
                        len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND %ss.%s = ?",
                                                unindexed ? "+" : "", store_list_columns[i]);
        }
        if (q.has_token)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.token_id = ?");
        if (!isnan(q.since))
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND s.created_at >= ?");
        if (q.has_step)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND json_extract(s.tags, '$.step') = ?");
        if (q.label_v)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len,
                                        " AND EXISTS (SELECT 1 FROM json_each(s.tags, '$.labels') "
                                        "WHERE key = ? AND ((type = 'text' AND value = ?) OR "
                                        "(? AND type IN ('integer', 'real') AND value = ?)))");
        snprintf(sql + len, sizeof(sql) - len, " ORDER BY s.id DESC LIMIT ?");

        rc = sqlite3_prepare_v2(store->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return fail(store, rc, "prepare list");
        sqlite3_bind_int64(st, bind++, q.cursor > 0 ? q.cursor : INT64_MAX);
        for (int i = 0; i < 4; i++)
                if (q.strs[i])
                        bind_text(st, bind++, q.strs[i]);
        if (q.has_token)
                sqlite3_bind_int64(st, bind++, q.token_id);
        if (!isnan(q.since))
                sqlite3_bind_double(st, bind++, q.since);
        if (q.has_step)
                sqlite3_bind_int64(st, bind++, q.step);
        if (q.label_v) {
                bind_text(st, bind++, q.label_k);
                bind_text(st, bind++, q.label_v);
                sqlite3_bind_int(st, bind++, q.label_is_num);
                sqlite3_bind_double(st, bind++, q.label_is_num ? q.label_num : 0);
        }
        sqlite3_bind_int(st, bind++, q.limit);

        items = json_array();
        if (!items) {
                r = -ENOMEM;
                goto out;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                json_t *o = row_to_object(st, q.with_result);
                if (!o || json_array_append_new(items, o)) {
                        r = -ENOMEM;
                        goto out;
                }
                last = sqlite3_column_int64(st, 0);
                count++;
        }
        if (rc != SQLITE_DONE) {
                r = fail(store, rc, "list submissions");
                goto out;
        }
        *ret_items = items;
        items = NULL;
        *ret_next_cursor = count == (size_t)q.limit ? last : 0;
out:
        sqlite3_finalize(st);
        json_decref(items);
        return r;
}

/* Run @sql (no parameters) and call @row for every row. */
static int each_row(StoreSqlite *s, const char *sql, int (*row)(sqlite3_stmt *st, void *arg), void *arg)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL), r = 0;

        if (rc != SQLITE_OK)
                return fail(s, rc, "prepare stats");
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = row(st, arg);
                if (r < 0)
                        break;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = fail(s, rc, "stats");
        sqlite3_finalize(st);
        return r;
}

static int row_count_into(sqlite3_stmt *st, void *arg)
{
        const char *k = (const char *)sqlite3_column_text(st, 0);
        if (!k)
                return 0;
        return json_object_set_new(arg, k, json_integer(sqlite3_column_int64(st, 1))) ? -ENOMEM : 0;
}

static int row_task(sqlite3_stmt *st, void *arg)
{
        json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:o, s:o}",
                              "task", col_text_or_null(st, 0),
                              "submissions", (json_int_t)sqlite3_column_int64(st, 1),
                              "done", (json_int_t)sqlite3_column_int64(st, 2),
                              "correct", (json_int_t)sqlite3_column_int64(st, 3),
                              "correct_rate", col_real_or_null(st, 4),
                              "median_speedup", col_real_or_null(st, 5));
        return !o || json_array_append_new(arg, o) ? -ENOMEM : 0;
}

/*
 * Rows (task, bucket, cumulative n, total n) of the speedup histogram, in
 * order: the first bucket whose cumulative count reaches half the total
 * holds the (lower) median; report its geometric middle, 2^((bucket + 0.5) / 8).
 */
static int row_median(sqlite3_stmt *st, void *arg)
{
        json_t *tasks = arg, *t;
        const char *task = (const char *)sqlite3_column_text(st, 0);
        int64_t cum = sqlite3_column_int64(st, 2), total = sqlite3_column_int64(st, 3);
        size_t i;

        if (!task || total <= 0 || 2 * cum < total)
                return 0;
        json_array_foreach(tasks, i, t) {
                const char *name = json_string_value(json_object_get(t, "task")); /* NULL: no task ('') */
                if (strcmp(name ? name : "", task) != 0)
                        continue;
                if (json_is_null(json_object_get(t, "median_speedup")))
                        return json_object_set_new(t, "median_speedup",
                                                   json_real(exp2(((double)sqlite3_column_int(st, 1) + 0.5) / 8.0)))
                                       ? -ENOMEM : 0;
                return 0;
        }
        return 0;
}

static int row_scalar(sqlite3_stmt *st, void *arg)
{
        *(int64_t *)arg = sqlite3_column_int64(st, 0);
        return 0;
}

/**
 * store_sqlite_stats() - counts for /v1/stats
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
 * never scans the history.
 * Return: 0 or a negative errno.
 */
static int store_sqlite_stats(void *be, json_t **ret_stats)
{
        StoreSqlite *store = be;
        StoreStatsParts p = { .states = json_object(), .verdicts = json_object(), .tasks = json_array() };
        int r = -ENOMEM;

        if (!p.states || !p.verdicts || !p.tasks)
                goto out;
        r = each_row(store, "SELECT state, count(*) FROM submissions "
                     "WHERE state IN ('queued', 'compiling', 'compiled', 'running') GROUP BY state "
                     "UNION ALL SELECT 'done', coalesce(sum(done), 0) FROM task_stats", row_count_into, p.states);
        if (r == 0)
                r = each_row(store, "SELECT verdict, n FROM verdict_counts WHERE n > 0 ORDER BY verdict",
                             row_count_into, p.verdicts);
        if (r == 0)
                r = each_row(store,
                             "SELECT nullif(task, ''), submissions, done, correct, CASE WHEN done > 0 "
                             "THEN CAST(correct AS REAL) / done END, NULL FROM task_stats ORDER BY task",
                             row_task, p.tasks);
        if (r == 0)
                r = each_row(store,
                             "SELECT task, bucket, sum(n) OVER (PARTITION BY task ORDER BY bucket), "
                             "sum(n) OVER (PARTITION BY task) FROM task_speedups ORDER BY task, bucket",
                             row_median, p.tasks);
        if (r == 0)
                r = each_row(store, "SELECT count(*) FROM compile_cache", row_scalar, &p.entries);
        if (r == 0)
                r = each_row(store, "SELECT value FROM counters WHERE name = 'cache_hits'", row_scalar, &p.hits);
        if (r == 0)
                r = each_row(store, "SELECT value FROM counters WHERE name = 'cache_misses'", row_scalar,
                             &p.misses);
        if (r == 0)
                r = each_row(store, "SELECT value FROM counters WHERE name = 'cache_bytes'", row_scalar, &p.bytes);
        if (r == 0)
                r = each_row(store, "SELECT active FROM queue_counts WHERE token_id = -1", row_scalar, &p.depth);
        if (r == 0)
                r = each_row(store, "SELECT coalesce(sum(submissions), 0) FROM task_stats", row_scalar, &p.total);
out:
        return store_stats_object(&p, r, ret_stats);
}

static int row_depth(sqlite3_stmt *st, void *arg)
{
        int64_t *d = arg;
        const char *state = (const char *)sqlite3_column_text(st, 0);
        int64_t n = sqlite3_column_int64(st, 1);
        if (!state)
                return 0;
        if (!strcmp(state, "queued"))
                d[0] = n;
        else if (!strcmp(state, "compiled"))
                d[1] = n;
        else if (!strcmp(state, "running"))
                d[2] = n;
        return 0;
}

/**
 * store_sqlite_queue_depth() - jobs waiting for compile, waiting for a GPU, and running
 * @store: open store; borrowed
 * @ret_queued, @ret_compiled, @ret_running: on success, the counts (each may be NULL)
 * Return: 0 or a negative errno.
 */
static int store_sqlite_queue_depth(void *be, int64_t *ret_queued, int64_t *ret_compiled, int64_t *ret_running)
{
        StoreSqlite *store = be;
        int64_t d[3] = { 0, 0, 0 };
        int r = each_row(store, "SELECT state, count(*) FROM submissions "
                         "WHERE state IN ('queued', 'compiled', 'running') GROUP BY state", row_depth, d);
        if (r < 0)
                return r;
        if (ret_queued)
                *ret_queued = d[0];
        if (ret_compiled)
                *ret_compiled = d[1];
        if (ret_running)
                *ret_running = d[2];
        return 0;
}

static int row_object(sqlite3_stmt *st, void *arg)
{
        json_t *o = json_object();
        int n = sqlite3_column_count(st);

        if (!o)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                json_t *v;
                switch (sqlite3_column_type(st, i)) {
                case SQLITE_INTEGER:
                        v = json_integer(sqlite3_column_int64(st, i));
                        break;
                case SQLITE_FLOAT:
                        v = json_real(sqlite3_column_double(st, i));
                        break;
                case SQLITE_NULL:
                        v = json_null();
                        break;
                default:
                        v = json_stringn((const char *)sqlite3_column_text(st, i),
                                         (size_t)sqlite3_column_bytes(st, i));
                        break;
                }
                if (json_object_set_new(o, sqlite3_column_name(st, i), v)) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        return json_array_append_new(arg, o) ? -ENOMEM : 0;
}

/**
 * store_sqlite_query_view() - read a dashboard view
 * @store:    open store; borrowed
 * @view:     the view's name: "v_" then [a-z0-9_], at most 64 bytes
 * @limit:    at most this many rows (1..LIMIT_LIST_PAGE_MAX)
 * @ret_rows: on success, a new array of objects, one per row, keyed by column
 * Return: 0, STORE_E_NOT_FOUND for an unknown view, -EINVAL for a bad name or
 * limit, or a negative errno.
 */
static int store_sqlite_query_view(void *be, const char *view, int limit, json_t **ret_rows)
{
        StoreSqlite *store = be;
        char sql[160];
        json_t *rows;
        size_t len;
        int r;

        if (!view || strncmp(view, "v_", 2) || (len = strlen(view)) > 64 || limit < 1 ||
            limit > LIMIT_LIST_PAGE_MAX)
                return -EINVAL;
        for (size_t i = 2; i < len; i++)
                if (!((view[i] >= 'a' && view[i] <= 'z') || (view[i] >= '0' && view[i] <= '9') || view[i] == '_'))
                        return -EINVAL;
        rows = json_array();
        if (!rows)
                return -ENOMEM;
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_schema WHERE type = 'view' AND name = '%s'", view);
        int64_t found = 0;
        r = each_row(store, sql, row_scalar, &found);
        if (r == 0 && !found)
                r = STORE_E_NOT_FOUND;
        if (r == 0) {
                snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\" LIMIT %d", view, limit);
                r = each_row(store, sql, row_object, rows);
        }
        if (r != 0) {
                json_decref(rows);
                return r;
        }
        *ret_rows = rows;
        return 0;
}

/**
 * store_sqlite_dashboard_rows() - see store.h.
 */
static int store_sqlite_dashboard_rows(void *be, StoreDash q, json_t *args, json_t **ret_rows)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        json_t *rows = NULL, *v;
        size_t i;
        int r, rc;

        if ((unsigned)q >= STORE_DASH__COUNT || (args && !json_is_array(args)))
                return -EINVAL;
        r = stmt_get(store, Q_DASH_FIRST + (int)q, &st);
        if (r < 0)
                return r;
        json_array_foreach(args, i, v) {
                int k = (int)i + 1;

                if (json_is_integer(v))
                        rc = sqlite3_bind_int64(st, k, json_integer_value(v));
                else if (json_is_real(v))
                        rc = sqlite3_bind_double(st, k, json_real_value(v));
                else if (json_is_string(v))
                        rc = sqlite3_bind_text(st, k, json_string_value(v), (int)json_string_length(v),
                                               SQLITE_STATIC);
                else if (json_is_null(v))
                        rc = sqlite3_bind_null(st, k);
                else
                        rc = SQLITE_MISMATCH;
                if (rc != SQLITE_OK) {
                        r = -EINVAL;
                        goto out;
                }
        }
        rows = json_array();
        if (!rows) {
                r = -ENOMEM;
                goto out;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = row_object(st, rows);
                if (r < 0)
                        goto out;
        }
        if (rc != SQLITE_DONE) {
                r = fail(store, rc, "dashboard query");
                goto out;
        }
        *ret_rows = rows;
        rows = NULL;
        r = 0;
out:
        stmt_done(st);
        json_decref(rows);
        return r;
}

/**
 * store_sqlite_schema_version() - the schema version (PRAGMA user_version)
 * @store:       open store; borrowed
 * @ret_version: on success, the number of the last migration applied
 * Return: 0 or a negative errno.
 */
static int store_sqlite_schema_version(void *be, int *ret_version)
{
        StoreSqlite *store = be;

        return user_version(store, ret_version);
}

/* ---- compile cache ------------------------------------------------------ */

static int counter_add(StoreSqlite *s, const char *name, int64_t delta)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, Q_COUNTER_ADD, &st);
        if (r < 0)
                return r;
        bind_text(st, 1, name);
        sqlite3_bind_int64(st, 2, delta);
        r = step_done(s, st, "count");
        stmt_done(st);
        return r;
}

/**
 * store_sqlite_cache_get() - look up a compile, counting the hit or the miss
 * @store:         open store; borrowed
 * @key:           32-byte cache key
 * @ret_compile:   on success, a new reference to the stored compile RESULT JSON
 * @ret_cubin:     on success, a new buffer (free()) with the CUBIN, or NULL
 *                 when the entry has none (a cached compile failure)
 * @ret_cubin_len: on success, its length
 * Return: 0, STORE_E_NOT_FOUND on a miss, or a negative errno.
 */
static int store_sqlite_cache_get(void *be, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                    size_t *ret_cubin_len)
{
        StoreSqlite *store = be;
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        sqlite3_stmt *st;
        int r, rc;

        r = stmt_get(store, Q_CACHE_GET, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                compile = col_json(st, 0);
                len = (size_t)sqlite3_column_bytes(st, 1);
                if (!compile) {
                        r = -EBADMSG;
                } else if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
                        cubin = malloc(len ? len : 1);
                        if (!cubin)
                                r = -ENOMEM;
                        else if (len)
                                memcpy(cubin, sqlite3_column_blob(st, 1), len);
                }
        } else if (rc == SQLITE_DONE) {
                r = STORE_E_NOT_FOUND;
        } else {
                r = fail(store, rc, "cache get");
        }
        stmt_done(st);
        if (r < 0)
                goto out;
        if (r == STORE_E_NOT_FOUND) {
                int r2 = counter_add(store, "cache_misses", 1);
                r = r2 < 0 ? r2 : r;
                goto out;
        }
        r = stmt_get(store, Q_CACHE_HIT, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, store_now());
        r = step_done(store, st, "cache hit");
        stmt_done(st);
        if (r == 0)
                r = counter_add(store, "cache_hits", 1);
out:
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
 * store_sqlite_cache_put() - store (or replace) a compile under its key
 * @store:     open store; borrowed
 * @key:       32-byte cache key
 * @compile:   the compile RESULT JSON; borrowed
 * @cubin:     the CUBIN, or NULL for a compile failure; borrowed
 * @cubin_len: its length (≤ LIMIT_CUBIN_BYTES)
 * The hit count of an existing entry is kept.
 * Return: 0, -EINVAL (-E2BIG for an oversized CUBIN), or a negative errno.
 */
static int store_sqlite_cache_put(void *be, const uint8_t key[32], const char *text, const uint8_t *cubin,
                               size_t cubin_len)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        int r = tx_begin(store);

        if (r < 0)
                return r;
        r = stmt_get(store, Q_CACHE_PUT, &st);
        if (r < 0)
                goto out;
        sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        if (cubin)
                sqlite3_bind_blob(st, 3, cubin, (int)cubin_len, SQLITE_STATIC);
        else
                sqlite3_bind_null(st, 3);
        sqlite3_bind_double(st, 4, store_now());
        r = step_done(store, st, "cache put");
        stmt_done(st);
out:
        return tx_end(store, r);
}

/**
 * store_sqlite_cache_prune() - bound the compile cache, least recently used first
 * @store:       open store; borrowed
 * @max_bytes:   what the cache may hold (compile JSON + CUBINs), ≥ 0
 * @ret_deleted: on success, entries dropped (may be NULL)
 * Deletes in rounds of at most 64 entries, each its own short transaction,
 * so that claims are not held up behind a large prune.
 * Return: 0, -EINVAL, or a negative errno.
 */
static int store_sqlite_cache_prune(void *be, int64_t max_bytes, int64_t *ret_deleted)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        int64_t deleted = 0, bytes = 0;
        int r = 0, rc;

        if (max_bytes < 0)
                return -EINVAL;
        /* Of the 64 least recently used, those needed to shed ?1 bytes. */
        rc = sqlite3_prepare_v2(store->db,
                                "DELETE FROM compile_cache WHERE key IN (SELECT key FROM (SELECT key, "
                                "sum(sz) OVER (ORDER BY last_used_at, key ROWS UNBOUNDED PRECEDING) - sz AS before "
                                "FROM (SELECT key, last_used_at, length(CAST(compile AS BLOB)) + "
                                "coalesce(length(cubin), 0) AS sz FROM compile_cache "
                                "ORDER BY last_used_at, key LIMIT 64)) WHERE before < ?1)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return fail(store, rc, "prepare cache prune");
        for (;;) {
                r = each_row(store, "SELECT value FROM counters WHERE name = 'cache_bytes'", row_scalar, &bytes);
                if (r < 0 || bytes <= max_bytes)
                        break;
                r = tx_begin(store);
                if (r < 0)
                        break;
                sqlite3_bind_int64(st, 1, bytes - max_bytes);
                r = step_done(store, st, "cache prune");
                int n = sqlite3_changes(store->db);
                sqlite3_reset(st);
                r = tx_end(store, r);
                if (r < 0)
                        break;
                deleted += n;
                if (n == 0)
                        break; /* empty, and the counter disagrees: nothing more to drop */
        }
        sqlite3_finalize(st);
        if (r == 0 && ret_deleted)
                *ret_deleted = deleted;
        return r;
}

/* ---- tokens ------------------------------------------------------------- */

/**
 * store_sqlite_token_create() - add an API token
 * @store:  open store; borrowed
 * @name:   unique name (1..LIMIT_NAME_BYTES bytes)
 * @hash:   sha256 of the token text (the text itself is never stored)
 * @limits: JSON object of per-token limits, or NULL; borrowed
 * @ret_id: on success, the token's id (> 0; may be NULL)
 * Return: 0, STORE_E_CONFLICT when the name (or hash) exists, -EINVAL, or a negative errno.
 */
static int store_sqlite_token_create(void *be, const char *name, const uint8_t hash[32], json_t *limits,
                       int64_t *ret_id)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        char *text = NULL;
        int r, rc;

        if (!name || !*name || strlen(name) > LIMIT_NAME_BYTES || !hash || (limits && !json_is_object(limits)))
                return -EINVAL;
        if (limits) {
                text = json_dumps(limits, JSON_COMPACT);
                if (!text)
                        return -ENOMEM;
        }
        r = tx_begin(store);
        if (r < 0)
                goto out_free;
        rc = sqlite3_prepare_v2(store->db, "INSERT INTO tokens(name, hash, created_at, limits) "
                                "VALUES (?1, ?2, ?3, ?4)", -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = fail(store, rc, "prepare token create");
                goto out;
        }
        bind_text(st, 1, name);
        sqlite3_bind_blob(st, 2, hash, 32, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, store_now());
        bind_text(st, 4, text);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                r = STORE_E_CONFLICT;
        else if (rc != SQLITE_DONE)
                r = fail(store, rc, "token create");
        else if (ret_id)
                *ret_id = sqlite3_last_insert_rowid(store->db);
out:
        sqlite3_finalize(st);
        r = tx_end(store, r);
out_free:
        free(text);
        return r;
}

/**
 * store_sqlite_token_revoke() - revoke a token by name (lookups fail from now on)
 * @store: open store; borrowed
 * @name:  the token's name
 * Return: 0, STORE_E_NOT_FOUND (no such token, or already revoked), or a negative errno.
 */
static int store_sqlite_token_revoke(void *be, const char *name)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        int r, rc;

        if (!name)
                return -EINVAL;
        r = tx_begin(store);
        if (r < 0)
                return r;
        rc = sqlite3_prepare_v2(store->db, "UPDATE tokens SET revoked_at = ?2 WHERE name = ?1 "
                                "AND revoked_at IS NULL", -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = fail(store, rc, "prepare token revoke");
                goto out;
        }
        bind_text(st, 1, name);
        sqlite3_bind_double(st, 2, store_now());
        r = step_done(store, st, "token revoke");
        if (r == 0 && sqlite3_changes(store->db) == 0)
                r = STORE_E_NOT_FOUND;
out:
        sqlite3_finalize(st);
        return tx_end(store, r);
}

/**
 * store_sqlite_token_lookup() - find a live token by the hash of its text
 * @store:      open store; borrowed
 * @hash:       sha256 of the presented token
 * @ret_id:     on success, the token id
 * @ret_limits: on success, a new object with its limits ({} when none; may be NULL)
 * Return: 0, STORE_E_NOT_FOUND (unknown or revoked), or a negative errno.
 */
static int store_sqlite_token_lookup(void *be, const uint8_t hash[32], int64_t *ret_id, json_t **ret_limits)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st;
        json_t *limits = NULL;
        int r, rc;

        r = stmt_get(store, Q_TOKEN_LOOKUP, &st);
        if (r < 0)
                return r;
        sqlite3_bind_blob(st, 1, hash, 32, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                if (sqlite3_column_type(st, 1) != SQLITE_NULL)
                        limits = col_json(st, 1);
                else
                        limits = json_object();
                if (!json_is_object(limits)) {
                        r = -EBADMSG;
                } else {
                        if (ret_id)
                                *ret_id = sqlite3_column_int64(st, 0);
                        if (ret_limits) {
                                *ret_limits = limits;
                                limits = NULL;
                        }
                }
        } else if (rc == SQLITE_DONE) {
                r = STORE_E_NOT_FOUND;
        } else {
                r = fail(store, rc, "token lookup");
        }
        stmt_done(st);
        json_decref(limits);
        return r;
}

static int row_token(sqlite3_stmt *st, void *arg)
{
        StoreRow row = sq_row(st);
        json_t *o = store_row_token(&row);
        return !o || json_array_append_new(arg, o) ? -ENOMEM : 0;
}

/**
 * store_sqlite_token_list() - every token, without hashes
 * @store:    open store; borrowed
 * @ret_list: on success, a new array of {"id", "name", "created_at", "revoked_at", "limits"}
 * Return: 0 or a negative errno.
 */
static int store_sqlite_token_list(void *be, json_t **ret_list)
{
        StoreSqlite *store = be;
        json_t *list = json_array();
        int r;

        if (!list)
                return -ENOMEM;
        r = each_row(store, "SELECT id, name, created_at, revoked_at, limits FROM tokens ORDER BY id",
                     row_token, list);
        if (r < 0) {
                json_decref(list);
                return r;
        }
        *ret_list = list;
        return 0;
}

/**
 * store_sqlite_secret() - the server secret (32 random bytes made at first open)
 * @store:      open store; borrowed
 * @ret_secret: on success, the secret
 * Return: 0, -EBADMSG when the stored value is damaged, or a negative errno.
 */
static int store_sqlite_secret(void *be, uint8_t ret_secret[32])
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(store->db, "SELECT value FROM meta WHERE key = 'secret'", -1, &st, NULL), r;

        if (rc != SQLITE_OK)
                return fail(store, rc, "prepare secret");
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 32) {
                memcpy(ret_secret, sqlite3_column_blob(st, 0), 32);
                r = 0;
        } else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
                r = -EBADMSG;
        } else {
                r = fail(store, rc, "read secret");
        }
        sqlite3_finalize(st);
        return r;
}


/* ---- copy (store_copy()) -------------------------------------------------- */

/**
 * store_sqlite_each_row() - call @fn for every row of @table, its stored columns only
 * @store: open store; borrowed
 * @table: a table name of the schema ([a-z_]; checked against sqlite_schema)
 * @fn:    called per row; a non-zero return stops and is returned
 * @arg:   passed to @fn
 *
 * Generated columns (006's step, sample, turn, parent) are left out: the
 * target computes its own. One read transaction: a consistent snapshot.
 *
 * Return: 0, STORE_E_NOT_FOUND for a table this database does not have,
 * what @fn returned, or a negative errno.
 */
static int store_sqlite_each_row(void *be, const char *table, StoreRowFn fn, void *arg)
{
        StoreSqlite *store = be;
        sqlite3_stmt *st = NULL;
        char sql[512];
        char *names[64];
        StoreVal vals[64];
        int n = 0, r = 0, rc;
        size_t len;

        for (const char *c = table; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        return -EINVAL;
        /* hidden = 0: an ordinary column; 2 and 3 are generated ones. */
        snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_xinfo('%s') WHERE hidden = 0 ORDER BY cid", table);
        rc = sqlite3_prepare_v2(store->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return fail(store, rc, "list columns");
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < 64)
                names[n++] = col_strdup(st, 0);
        sqlite3_finalize(st);
        st = NULL;
        if (n == 0)
                return STORE_E_NOT_FOUND;
        len = (size_t)snprintf(sql, sizeof(sql), "SELECT ");
        for (int i = 0; i < n && len < sizeof(sql); i++)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s\"%s\"", i ? ", " : "", names[i]);
        if (len < sizeof(sql))
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, " FROM \"%s\"", table);
        if (len >= sizeof(sql)) {
                r = -E2BIG;
                goto out;
        }
        rc = sqlite3_prepare_v2(store->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = fail(store, rc, "read table");
                goto out;
        }
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                for (int i = 0; i < n; i++) {
                        StoreVal *v = &vals[i];
                        memset(v, 0, sizeof(*v));
                        switch (sqlite3_column_type(st, i)) {
                        case SQLITE_INTEGER:
                                v->type = STORE_VAL_INT;
                                v->i = sqlite3_column_int64(st, i);
                                break;
                        case SQLITE_FLOAT:
                                v->type = STORE_VAL_REAL;
                                v->d = sqlite3_column_double(st, i);
                                break;
                        case SQLITE_TEXT:
                                v->type = STORE_VAL_TEXT;
                                v->p = sqlite3_column_text(st, i);
                                v->len = (size_t)sqlite3_column_bytes(st, i);
                                break;
                        case SQLITE_BLOB:
                                v->type = STORE_VAL_BLOB;
                                v->p = sqlite3_column_blob(st, i);
                                v->len = (size_t)sqlite3_column_bytes(st, i);
                                break;
                        default:
                                v->type = STORE_VAL_NULL;
                                break;
                        }
                }
                r = fn(arg, n, (const char *const *)names, vals);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = fail(store, rc, "read table");
out:
        sqlite3_finalize(st);
        for (int i = 0; i < n; i++)
                free(names[i]);
        return r;
}

/* The table store_open() picks for this backend (store_backend.h). */
/* tx_begin() and tx_end() for store.c, which runs tx_ops in them. */
static int store_sqlite_tx_begin(void *be, bool lazy)
{
        return tx_begin(be);
}

static int store_sqlite_tx_end(void *be, int r)
{
        return tx_end(be, r);
}

const StoreOps store_sqlite_ops = {
        .tx = &tx_ops,
        .tx_begin = store_sqlite_tx_begin,
        .tx_end = store_sqlite_tx_end,
        .name = "sqlite",
        .open = store_sqlite_open,
        .open_readonly = store_sqlite_open_readonly,
        .close = store_sqlite_close,
        .insert_request = store_sqlite_insert_request,
        .idem_get = idem_get,
        .prune_idempotency = store_sqlite_prune_idempotency,
        .begin_group = store_sqlite_begin_group,
        .commit_group = store_sqlite_commit_group,
        .rollback_group = store_sqlite_rollback_group,
        .claim_next = store_sqlite_claim_next,
        .heartbeat = store_sqlite_heartbeat,
        .heartbeat_owner = store_sqlite_heartbeat_owner,
        .set_cache_key = store_sqlite_set_cache_key,
        .set_compiled = store_sqlite_set_compiled,
        .requeue = store_sqlite_requeue,
        .cancel = store_sqlite_cancel,
        .get_submission = store_sqlite_get_submission,
        .list_submissions = store_sqlite_list_submissions,
        .stats = store_sqlite_stats,
        .queue_depth = store_sqlite_queue_depth,
        .query_view = store_sqlite_query_view,
        .dashboard_rows = store_sqlite_dashboard_rows,
        .schema_version = store_sqlite_schema_version,
        .cache_put = store_sqlite_cache_put,
        .cache_prune = store_sqlite_cache_prune,
        .token_create = store_sqlite_token_create,
        .token_revoke = store_sqlite_token_revoke,
        .token_lookup = store_sqlite_token_lookup,
        .token_list = store_sqlite_token_list,
        .secret = store_sqlite_secret,
        .each_row = store_sqlite_each_row,
};
