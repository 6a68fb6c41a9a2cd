/*
 * store_sqlite - the store's SQLite backend: the queue and the history of
 * one host in one database file (store.h is the contract; the operations,
 * written once, call the primitives here through store_sqlite_ops at the
 * end; docs/store.md).
 *
 * This is the only file that includes <sqlite3.h>; SQLite result codes are
 * translated into negative errnos here, and SQLite failures are logged here
 * once with SQLite's own message. Every statement of store_sql.def's table is
 * prepared once per connection (SQLITE_PREPARE_PERSISTENT) and reset after
 * use.
 *
 * Invariants: every write runs in BEGIN IMMEDIATE (so the write lock is taken
 * up front and the busy handler applies, never SQLITE_BUSY_SNAPSHOT); the
 * transactions that accept submissions run with synchronous=FULL and commit
 * before the caller is told the ids; the connection is otherwise at
 * synchronous=NORMAL. One writer at a time is what makes a claim safe here:
 * the claim's UPDATE picks and takes its row under the database's write lock.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"

#define STORE_BUSY_TIMEOUT_MS 10000

/* This backend's own statements, after store_sql.def's in StoreSqlite.stmts. */
enum {
        Q_BEGIN = STORE_Q__COUNT,
        Q_COMMIT,
        Q_ROLLBACK,
        Q_SAVEPOINT,
        Q_ROLLBACK_TO,
        Q_RELEASE,
        Q_SYNC_FULL,
        Q_SYNC_NORMAL,
        Q__MAX
};

static const char *const own_sql[Q__MAX - STORE_Q__COUNT] = {
        "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "SAVEPOINT store_ins", "ROLLBACK TO SAVEPOINT store_ins",
        "RELEASE SAVEPOINT store_ins", "PRAGMA synchronous=FULL", "PRAGMA synchronous=NORMAL",
};

typedef struct StoreSqlite StoreSqlite;

struct StoreSqlite {
        sqlite3 *db;
        sqlite3_stmt *stmts[Q__MAX];
        bool durable;           /* the open transaction runs at synchronous=FULL */
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
        log_error("store: %.80s failed: %s", what, s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        return err_or_eio(rc);
}

static const char *sql_of(int q)
{
        return q >= STORE_Q__COUNT ? own_sql[q - STORE_Q__COUNT] : store_sql_text(q, false);
}

/* Prepare @text (store_sql_render()'s SQLite text of it); @flags: sqlite3_prepare_v3()'s. */
static int prepare(StoreSqlite *s, const char *text, unsigned flags, sqlite3_stmt **ret_stmt)
{
        char *sql = store_sql_render(text, false);
        int rc;

        if (!sql)
                return -ENOMEM;
        rc = sqlite3_prepare_v3(s->db, sql, -1, flags, ret_stmt, NULL);
        free(sql);
        return rc == SQLITE_OK ? 0 : fail(s, rc, text);
}

/* Borrow the prepared statement @q, reset and unbound. */
static int stmt_get(StoreSqlite *s, int q, sqlite3_stmt **ret_stmt)
{
        *ret_stmt = NULL;
        if (!sql_of(q))
                return -EINVAL; /* not a statement of this backend */
        if (!s->stmts[q]) {
                int r = prepare(s, sql_of(q), SQLITE_PREPARE_PERSISTENT, &s->stmts[q]);
                if (r < 0)
                        return r;
        }
        *ret_stmt = s->stmts[q];
        return 0;
}

/* Run one of this backend's own statements. */
static int run_q(StoreSqlite *s, int q)
{
        sqlite3_stmt *st;
        int r = stmt_get(s, q, &st), rc;

        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return fail(s, rc, sql_of(q));
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

/* StoreOps.tx_begin: BEGIN IMMEDIATE; STORE_TX_DURABLE at synchronous=FULL until its end. */
static int store_sqlite_tx_begin(void *be, StoreTxKind kind)
{
        StoreSqlite *s = be;
        int r;

        if (!sqlite3_get_autocommit(s->db))
                return -EINVAL; /* one is open: a group's, which only inserts may join */
        s->durable = kind == STORE_TX_DURABLE;
        r = s->durable ? run_q(s, Q_SYNC_FULL) : 0;
        if (r == 0)
                r = begin_write(s);
        if (r < 0 && s->durable) {
                run_q(s, Q_SYNC_NORMAL);
                s->durable = false;
        }
        return r;
}

/* End the transaction: commit when @r is 0, roll back otherwise. Returns @r or the commit's error. */
static int tx_end(StoreSqlite *s, int r)
{
        if (sqlite3_get_autocommit(s->db)) {
                r = r != 0 ? r : -EIO; /* SQLite already rolled back (I/O error, full disk) */
        } else {
                if (r == 0)
                        r = run_q(s, Q_COMMIT);
                if (r != 0 && !sqlite3_get_autocommit(s->db))
                        run_q(s, Q_ROLLBACK);
        }
        write_release(s);
        if (s->durable)
                run_q(s, Q_SYNC_NORMAL);
        s->durable = false;
        return r;
}

static int store_sqlite_tx_end(void *be, int r)
{
        return tx_end(be, r);
}

/* SQLite rolled the open transaction back by itself (an I/O error, a full disk). */
static int store_sqlite_tx_lost(void *be)
{
        StoreSqlite *s = be;
        return sqlite3_get_autocommit(s->db) ? -EIO : 0;
}

/* StoreOps.exec: one of this backend's own statements (the savepoints) runs prepared. */
static int store_sqlite_exec(void *be, const char *sql)
{
        for (int q = Q_BEGIN; q < Q__MAX; q++)
                if (!strcmp(sql, own_sql[q - STORE_Q__COUNT]))
                        return run_q(be, q);
        return exec_sql(be, sql);
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

/* ---- primitives (StoreOps): statements and their rows --------------------- */

static int bind(sqlite3_stmt *st, int i, const StoreVal *v)
{
        switch (v->type) {
        case STORE_VAL_INT:
                return sqlite3_bind_int64(st, i, v->i);
        case STORE_VAL_REAL:
                return sqlite3_bind_double(st, i, v->d);
        case STORE_VAL_TEXT:
                return sqlite3_bind_text(st, i, v->p, v->len ? (int)v->len : -1, SQLITE_STATIC);
        case STORE_VAL_BLOB:
                return sqlite3_bind_blob(st, i, v->len ? v->p : "", (int)v->len, SQLITE_STATIC);
        default:
                return sqlite3_bind_null(st, i);
        }
}

static void store_sqlite_done(StoreRow *row)
{
        if (row->q < 0) {
                sqlite3_finalize(row->res);
        } else if (row->res) {
                sqlite3_reset(row->res);
                sqlite3_clear_bindings(row->res);
        }
        row->res = NULL;
}

static int store_sqlite_query(void *be, int q, const char *sql, const StoreVal *args, int n, StoreRow *ret_row)
{
        StoreSqlite *s = be;
        sqlite3_stmt *st = NULL;
        int r, rc = SQLITE_OK;

        if (q >= 0 && q < STORE_Q__COUNT) {
                r = stmt_get(s, q, &st);
        } else {
                q = -1;
                r = prepare(s, sql, 0, &st);
        }
        if (r < 0)
                return r;
        *ret_row = (StoreRow){ .ops = &store_sqlite_ops, .be = s, .res = st, .q = q };
        for (int i = 0; rc == SQLITE_OK && i < n; i++)
                rc = bind(st, i + 1, &args[i]);
        if (rc != SQLITE_OK) {
                store_sqlite_done(ret_row);
                return -EINVAL;
        }
        return 0;
}

static int store_sqlite_step(StoreRow *row)
{
        int rc = sqlite3_step(row->res);

        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return -EEXIST; /* a unique violation: an outcome the caller handles */
        return fail(row->be, rc, sqlite3_sql(row->res));
}

static int64_t store_sqlite_changes(const StoreRow *row)
{
        return sqlite3_changes64(((StoreSqlite *)row->be)->db);
}

static int64_t store_sqlite_inserted_id(const StoreRow *row)
{
        return sqlite3_last_insert_rowid(((StoreSqlite *)row->be)->db);
}

static bool store_sqlite_is_null(const StoreRow *row, int col)
{
        return sqlite3_column_type(row->res, col) == SQLITE_NULL;
}

static int64_t store_sqlite_i64(const StoreRow *row, int col)
{
        return sqlite3_column_int64(row->res, col);
}

static double store_sqlite_real(const StoreRow *row, int col)
{
        return sqlite3_column_double(row->res, col);
}

static const char *store_sqlite_text(const StoreRow *row, int col, size_t *ret_len)
{
        const char *v = (const char *)sqlite3_column_text(row->res, col);
        if (ret_len)
                *ret_len = v ? (size_t)sqlite3_column_bytes(row->res, col) : 0;
        return v;
}

static int store_sqlite_blob(const StoreRow *row, int col, uint8_t **ret, size_t *ret_len)
{
        size_t len = (size_t)sqlite3_column_bytes(row->res, col);
        uint8_t *copy = NULL;

        if (sqlite3_column_type(row->res, col) != SQLITE_NULL) {
                copy = malloc(len ? len : 1);
                if (!copy)
                        return -ENOMEM;
                if (len)
                        memcpy(copy, sqlite3_column_blob(row->res, col), len);
        }
        *ret = copy;
        *ret_len = copy ? len : 0;
        return 0;
}

static json_t *store_sqlite_value(const StoreRow *row, int col)
{
        switch (sqlite3_column_type(row->res, col)) {
        case SQLITE_INTEGER:
                return json_integer(sqlite3_column_int64(row->res, col));
        case SQLITE_FLOAT:
                return json_real(sqlite3_column_double(row->res, col));
        case SQLITE_NULL:
                return json_null();
        default:
                return json_stringn((const char *)sqlite3_column_text(row->res, col),
                                    (size_t)sqlite3_column_bytes(row->res, col));
        }
}

static int store_sqlite_columns(const StoreRow *row)
{
        return sqlite3_column_count(row->res);
}

static const char *store_sqlite_column_name(const StoreRow *row, int col)
{
        return sqlite3_column_name(row->res, col);
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

/* StoreOps.migrate: the files above PRAGMA user_version, in one transaction. */
static int store_sqlite_migrate(void *be, const char *path)
{
        StoreSqlite *s = be;
        int known = store_migrations_known(kevald_migrations, kevald_migrations_count), current, r;
        char sql[LIMIT_DSN_BYTES + 64];

        if (known < 0)
                return known;
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
        snprintf(sql, sizeof(sql), "\"%s\"", path);
        return store_newer_db(sql, current, known);
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
 * store_sqlite_open() - open (creating if needed) the database
 * @path:      database file; created with its WAL files next to it
 * @ret_be:    on success, a new StoreSqlite (store_sqlite_close())
 *
 * Sets WAL, busy_timeout and synchronous=NORMAL (store_open() migrates and
 * makes the secret).
 *
 * Return: 0 or a negative errno.
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
out:
        if (r == 0)
                *ret_be = s;
        else
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
        known = store_migrations_known(kevald_migrations, kevald_migrations_count);
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

/* PRAGMA user_version: the number of the last migration applied. */
static int store_sqlite_schema_version(void *be, int *ret_version)
{
        return user_version(be, ret_version);
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
                if (!(names[n++] = strdup((const char *)sqlite3_column_text(st, 0))))
                        r = -ENOMEM;
        sqlite3_finalize(st);
        st = NULL;
        if (n == 0)
                return STORE_E_NOT_FOUND;
        if (r < 0)
                goto out;
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
const StoreOps store_sqlite_ops = {
        .name = "sqlite",
        STORE_OPS_EVERY(store_sqlite),
        .inserted_id = store_sqlite_inserted_id,
        .open_readonly = store_sqlite_open_readonly,
        .each_row = store_sqlite_each_row,
};
