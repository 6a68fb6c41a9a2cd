/*
 * store_backend - the seam between the store's operations and its two
 * backends; not for use outside server/store/store*.c. store.h stays the one
 * contract.
 *
 * Above the seam, written once: the front (server/store/store.c: the backend
 * choice, the pool, the claim gate, the write-fault flag, the copy), the
 * operations (server/store/store_queue.c: acceptance, claims, leases, the compile
 * cache; server/store/store_read.c: reads, tokens, the secret), the rules
 * (server/store/store_rules.c) and every statement in both dialects, one entry
 * each in server/store/store_sql.def (its StoreQuery name, arguments and SQL),
 * made a table by server/store/store_sql.c.
 *
 * Below it, each backend (server/store/store_sqlite.c, server/store/store_pg.c) fills a
 * StoreOps table with what truly differs: opening and migrating, its
 * transactions, and the primitives the operations run statements with
 * (query, step, changes, done, and the column accessors of a StoreRow);
 * PostgreSQL adds its multi-row insert, LISTEN/NOTIFY and the copy's
 * target, SQLite the copy's source. Each
 * backend exports its table and nothing else. Only store_sqlite.c includes
 * <sqlite3.h>; only store_pg.c includes <libpq-fe.h>.
 *
 * Adding a store operation: its store.h prototype, its body over the
 * primitives (store_queue.c or store_read.c), and its SQL in store_sql.def.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/limits.h"
#include "server/store/store.h"

typedef struct StoreOps StoreOps;

typedef enum { STORE_TX_LAZY, STORE_TX_WRITE, STORE_TX_DURABLE } StoreTxKind;

/* ---- statements (server/store/store_sql.def, server/store/store_sql.c) ---------------- */

/* Every statement the operations run, by name: server/store/store_sql.def. */
typedef enum {
#define STORE_SQL(name, ...) STORE_Q_##name,
#define STORE_DASH_SQL(name, ...) STORE_Q_DASH_##name,
#include "server/store/store_sql.def"
#undef STORE_SQL
#undef STORE_DASH_SQL
        STORE_Q__COUNT,
        STORE_Q_DASH_FIRST = STORE_Q_DASH_QUEUE,        /* StoreDash q is STORE_Q_DASH_FIRST + q */
} StoreQuery;

const char *store_sql_text(int q, bool pg);
char *store_sql_render(const char *text, bool pg);

/* ---- primitives: a statement's arguments and its rows ------------------- */

/* One value: an argument, or a copied row's column (store_copy()). */
typedef enum { STORE_VAL_NULL, STORE_VAL_INT, STORE_VAL_REAL, STORE_VAL_TEXT, STORE_VAL_BLOB } StoreValType;
typedef struct StoreVal {
        StoreValType type;
        int64_t i;
        double d;
        const void *p;          /* TEXT (NUL-terminated) or BLOB; borrowed */
        size_t len;             /* BLOB: its bytes; TEXT: its bytes, or 0 (up to the NUL) */
} StoreVal;

#define SV_INT(v) ((StoreVal){ .type = STORE_VAL_INT, .i = (v) })
#define SV_REAL(v) ((StoreVal){ .type = STORE_VAL_REAL, .d = (v) })
#define SV_TEXT(v) ((StoreVal){ .type = (v) ? STORE_VAL_TEXT : STORE_VAL_NULL, .p = (v) }) /* NULL: SQL NULL */
#define SV_STR(v) ((StoreVal){ .type = STORE_VAL_TEXT, .p = (v) })                     /* never NULL */
#define SV_BLOB(v, n) ((StoreVal){ .type = STORE_VAL_BLOB, .p = (v), .len = (n) })
#define SV_NULL ((StoreVal){ .type = STORE_VAL_NULL })
#define SV_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/*
 * StoreRow - a statement being run, read a row at a time through its
 * backend's accessors: what the operations see of SQLite's statement or
 * PostgreSQL's result. Between ->query() and ->done().
 */
typedef struct StoreRow {
        const StoreOps *ops;
        void *be;               /* the connection */
        void *res;              /* the statement (SQLite) or result (PostgreSQL) */
        int q;                  /* the StoreQuery, or -1 for text run once */
        int i, n;               /* PostgreSQL: the current row, the rows */
} StoreRow;

/* Called per copied row with the column names and values; non-zero stops the copy with that code. */
typedef int (*StoreRowFn)(void *arg, int n, const char *const *names, const StoreVal *vals);

/*
 * StoreOps - one backend, chosen once in store_open(). Each call takes the
 * backend's connection (@be, what ->open gave) first. A NULL member: the
 * backend does not have it (its comment says what the store does then).
 */
struct StoreOps {
        const char *name;               /* "sqlite" or "postgresql" (for tests) */
        bool pg;                        /* which dialect of store_sql_text() */
        bool claim_gate;                /* store.c's claim gate applies (a fleet that LISTENs) */
        bool shared;                    /* other hosts write the same database at once */
        bool late_arg_errors;           /* a dashboard argument of the wrong type fails the query (-EIO, -EPROTO) */
        int (*open)(const char *path, void **ret_be);   /* connects (SQLite: creates the file) */
        /* Applies the migrations above the database's version (STORE_E_NEWER_DB: it is newer;
         * @path: the store_open() path, for messages). */
        int (*migrate)(void *be, const char *path);
        int (*open_readonly)(const char *path, void **ret_be);         /* NULL: store_open_readonly() refuses */
        void (*close)(void *be);
        int (*schema_version)(void *be, int *ret_version);
        /* A write transaction; its commit waits for the disk unless STORE_TX_LAZY (PostgreSQL:
         * synchronous_commit off; SQLite: as any), and STORE_TX_DURABLE is synchronous=FULL on
         * SQLite. -EINVAL when one is open on this connection. */
        int (*tx_begin)(void *be, StoreTxKind kind);
        int (*tx_end)(void *be, int r); /* commit when @r is 0, else roll back: @r, or the commit's failure */
        int (*tx_lost)(void *be);       /* the open transaction is gone (-EIO, -ENOTCONN), or 0 */
        int (*exec)(void *be, const char *sql);        /* a statement without arguments or rows */
        /* Insert @n rows and their requests, ids drawn here (NULL: STORE_Q_INSERT_SUB per row). */
        int (*insert_rows)(void *be, const StoreNew *subs, size_t n, int64_t *ids, double now);
        /* Statements: run @q (or, @q < 0, the text @sql once; ?N arguments) with @args bound;
         * 0 with @ret_row before its first row (->done() it), -EINVAL for an argument that
         * does not bind, -EEXIST for a unique violation (not logged), or -errno (logged). */
        int (*query)(void *be, int q, const char *sql, const StoreVal *args, int n, StoreRow *ret_row);
        int (*step)(StoreRow *row);     /* 1: a row; 0: no more; or -errno (logged; -EEXIST not) */
        int64_t (*changes)(const StoreRow *row);       /* rows written, once step() gave 0 */
        /* The id its INSERT made, once step() gave 0 (what a backend without ->insert_rows lends). */
        int64_t (*inserted_id)(const StoreRow *row);
        void (*done)(StoreRow *row);
        bool (*is_null)(const StoreRow *row, int col);
        int64_t (*i64)(const StoreRow *row, int col);          /* 0 for NULL */
        double (*real)(const StoreRow *row, int col);          /* for a non-NULL column */
        const char *(*text)(const StoreRow *row, int col, size_t *ret_len); /* NULL for NULL; @ret_len may be NULL */
        /* A bytes column: a new copy (free(); NULL with length 0 for NULL), or -ENOMEM. */
        int (*blob)(const StoreRow *row, int col, uint8_t **ret, size_t *ret_len);
        json_t *(*value)(const StoreRow *row, int col); /* as JSON, by the column's type; a new reference */
        int (*columns)(const StoreRow *row);
        const char *(*column_name)(const StoreRow *row, int col);
        /* Wake-ups (NULL: -EOPNOTSUPP, one host). */
        int (*listen)(void *be);
        int (*next_event)(void *be, int timeout_ms, StoreEvent *ret_ev);
        /* store_copy(): the source reads each row of a table (STORE_E_NOT_FOUND: no such table) ... */
        int (*each_row)(void *be, const char *table, StoreRowFn fn, void *arg);
        /* ... and the target takes them, in one transaction (NULL: not a copy source / target). */
        int (*copy_begin)(void *be, const char *const *tables, size_t n_tables, bool force);
        int (*copy_row)(void *be, const char *table, int n, const char *const *names, const StoreVal *vals);
        int (*copy_end)(void *be, const char *const *tables, size_t n_tables, int r);
};

/*
 * The members every backend fills, from its functions named
 * <prefix>_<member> (store_sqlite_open, store_pg_open, ...): the list
 * written once, each backend's table adding only what it alone has.
 */
#define STORE_OPS_EVERY(prefix)                                                                               \
        .open = prefix##_open, .migrate = prefix##_migrate, .close = prefix##_close,                         \
        .schema_version = prefix##_schema_version, .tx_begin = prefix##_tx_begin, .tx_end = prefix##_tx_end, \
        .tx_lost = prefix##_tx_lost, .exec = prefix##_exec, .query = prefix##_query, .step = prefix##_step,  \
        .changes = prefix##_changes, .done = prefix##_done, .is_null = prefix##_is_null, .i64 = prefix##_i64, \
        .real = prefix##_real, .text = prefix##_text, .blob = prefix##_blob, .value = prefix##_value,        \
        .columns = prefix##_columns, .column_name = prefix##_column_name

extern const StoreOps store_sqlite_ops;        /* server/store/store_sqlite.c */
extern const StoreOps store_pg_ops;            /* server/store/store_pg.c */

/* A Store: one backend connection (be) and that backend's table (ops), fixed at store_open(). */
struct Store {
        const StoreOps *ops;
        void *be;
        bool empty_valid[2];            /* per Stage: the last claim found nothing ... */
        unsigned long empty_gen[2];     /* ... at this work generation */
        double empty_at[2];             /* ... at this monotonic time */
        bool listening;                 /* store_listen() succeeded: counted in watching */
        bool listen_lost;               /* ... but the connection is lost: not counted now */
        bool in_group;                  /* between store_begin_group() and its commit or rollback */
        bool group_lost;                /* ... whose transaction the backend lost */
};

/* ---- running statements (server/store/store_rules.c) --------------------------- */

int store_db_exec(Store *s, int q, const StoreVal *args, int n, int64_t *ret_changes);
int store_db_first(Store *s, int q, const char *sql, const StoreVal *args, int n, StoreRow *ret_row);
int store_db_end(StoreRow *row, int r);
int store_db_scalar(Store *s, int q, const StoreVal *args, int n, int64_t *ret);
bool store_db_has(Store *s, int q);
int store_db_objects(Store *s, int q, const char *sql, const StoreVal *args, int n, json_t *rows);
json_t *store_row_json(const StoreRow *row, int col);
json_t *store_row_submission(const StoreRow *row, bool with_result);
json_t *store_row_token(const StoreRow *row);

/* ---- rules (server/store/store_rules.c) ----------------------------------------- */

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
char *store_ids_encode(const int64_t *ids, size_t n);
int store_ids_decode(const char *text, size_t max, int64_t **ret_ids, size_t *ret_n);
int store_check_insert(const StoreInsert *ins);
/* Submissions of @ins that join the queue (not done at insert): what quotas count. */
int64_t store_insert_queued(const StoreInsert *ins);
json_t *store_internal_error_result(const char *task, const char *state, int attempts);
int store_migration_number(const char *name);

/* A migration file embedded by tools/bin2c (server/meson.build): migrations/, migrations/pg/. */
typedef struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} StoreMigration;
extern const StoreMigration kevald_migrations[];       /* SQLite's */
extern const unsigned long kevald_migrations_count;
extern const StoreMigration kevald_pg_migrations[];    /* PostgreSQL's */
extern const unsigned long kevald_pg_migrations_count;

int store_migrations_known(const StoreMigration *m, unsigned long n);
int store_newer_db(const char *shown, int current, int known);
int store_check_finish(const char *verdict, json_t *result, char **ret_text);

/* ---- shared by the front and the operations -------------------------------- */

int store_note_write(int r, bool adds);
int store_tx_begin(Store *s, StoreTxKind kind);
int store_claim_job(Store *s, Stage stage, const char *owner, double lease_s, StoreJob **ret_job);
int store_secret_ensure(Store *s);
