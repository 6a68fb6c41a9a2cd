/*
 * store_sql - every statement the store's operations run, in both dialects:
 * the table of server/store/store_sql.def indexed by StoreQuery (store_backend.h),
 * the SQL those entries share (the claim's pick, the columns of a
 * submission), and store_sql_render(), which gives each dialect its text.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store_backend.h"

typedef struct StoreSql {
        const char *both;
        const char *sqlite, *pg;
} StoreSql;

/*
 * Claim the next job waiting in state FROM, moving it to TO. Highest
 * priority first; within it, round robin between tokens (the one this stage
 * served longest ago, token_service.SERVED), oldest job first. The tokens
 * with waiting work are enumerated by a skip-scan of the index (state,
 * priority, token_id, id): a claim costs O(tokens x log n), not a pass over
 * every waiting row. SQLite: one UPDATE under the database's write lock.
 */
#define SQ_CLAIM(TO, FROM, SERVED)                                                                            \
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
        "RETURNING id, stage_attempts, priority, token_id, task, mode"

/*
 * PostgreSQL: the same order, the row picked FOR UPDATE SKIP LOCKED (a row
 * another host is claiming right now is passed over, not waited for). The
 * tokens with waiting work at the top priority come from a skip-scan of
 * (state, priority, token_id, id), ordered by their service time, then per
 * token (lazily, in that order, stopping at the first hit) its oldest
 * unlocked row. When every top-priority row is locked by other claimers at
 * that instant, PG_CLAIM_ANY (a sort over every waiting row) takes the best
 * unlocked one of any priority.
 */
#define PG_PICK(FROM, SERVED)                                                                                 \
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
#define PG_PICK_ANY(FROM, SERVED)                                                                             \
        "WITH c AS (SELECT s.id FROM submissions s LEFT JOIN token_service ts ON ts.token_id = s.token_id "   \
        "WHERE s.state = '" FROM "' ORDER BY s.priority DESC, coalesce(ts." SERVED ", 0), s.id "              \
        "LIMIT 1 FOR UPDATE OF s SKIP LOCKED) "
#define PG_CLAIM_UPDATE(TO)                                                                                   \
        "UPDATE submissions u SET state = '" TO "', lease_owner = ?1, lease_expires = ?2, "                   \
        "attempts = u.attempts + 1, stage_attempts = u.stage_attempts + 1, "                                  \
        "started_at = coalesce(u.started_at, ?3) FROM c WHERE u.id = c.id "                                  \
        "RETURNING u.id, u.stage_attempts, u.priority, u.token_id, u.task, u.mode"
#define PG_CLAIM(TO, FROM, SERVED) PG_PICK(FROM, SERVED) PG_CLAIM_UPDATE(TO)
#define PG_CLAIM_ANY(TO, FROM, SERVED) PG_PICK_ANY(FROM, SERVED) PG_CLAIM_UPDATE(TO)

/*
 * PostgreSQL stamps the token's service time unless another claimer is
 * stamping it at this instant (its stamp is as recent), so that claims of
 * one busy token do not queue on its token_service row.
 */
#define PG_SERVED(COL)                                                                                        \
        "WITH l AS (SELECT token_id FROM token_service WHERE token_id = ?1 FOR UPDATE SKIP LOCKED) "          \
        "UPDATE token_service t SET " COL " = ?2 FROM l WHERE t.token_id = l.token_id"

#define SUB_COLUMNS "s.id, s.state, s.verdict, s.task, s.mode, s.priority, s.created_at, s.started_at, " \
                    "s.finished_at, s.attempts, s.speedup, s.tags"
#define LEASE_COLUMNS "SELECT id, state, stage_attempts, task FROM submissions WHERE state IN ('compiling', 'running') "
#define TURN_COLUMNS "SELECT id, parent, turn, run_id, step, sample, task, state, verdict, speedup, token_id, " \
                     "created_at FROM v_submission_turns "

#define STORE_SQL(name, ...) [STORE_Q_##name] = { __VA_ARGS__ },
#define STORE_DASH_SQL(name, ...) [STORE_Q_DASH_##name] = { __VA_ARGS__ },
static const StoreSql sql[STORE_Q__COUNT] = {
#include "server/store/store_sql.def"
};
#undef STORE_SQL
#undef STORE_DASH_SQL

/* store_dashboard_rows() finds StoreDash q at STORE_Q_DASH_FIRST + q. */
#define STORE_SQL(name, ...)
#define STORE_DASH_SQL(name, ...)                                                                             \
        _Static_assert(STORE_Q_DASH_##name - STORE_Q_DASH_FIRST == STORE_DASH_##name,                         \
                       "store_sql.def lists " #name " out of StoreDash's order");
#include "server/store/store_sql.def"
#undef STORE_SQL
#undef STORE_DASH_SQL
_Static_assert(STORE_Q__COUNT - STORE_Q_DASH_FIRST == STORE_DASH__COUNT, "store_sql.def lists every StoreDash");

/**
 * store_sql_text() - the text of statement @q in a dialect
 * @q:  a StoreQuery
 * @pg: PostgreSQL's text rather than SQLite's (still as written: store_sql_render())
 * Return: a static string, or NULL when that backend has no such statement.
 */
const char *store_sql_text(int q, bool pg)
{
        if (q < 0 || q >= STORE_Q__COUNT)
                return NULL;
        if (sql[q].both)
                return sql[q].both;
        return pg ? sql[q].pg : sql[q].sqlite;
}

/**
 * store_sql_render() - @text as a dialect runs it
 * @text: SQL with ?N arguments, each maybe cast as PostgreSQL needs
 *        ("?1::text", "?2::double precision")
 * @pg:   PostgreSQL's: ?N written $N, casts kept; SQLite's: ?N kept, the
 *        casts of arguments dropped (SQLite's are dynamic types)
 * A '?' or "::" inside a quoted string or name is left alone.
 * Return: a new string (free()), or NULL when out of memory.
 */
char *store_sql_render(const char *text, bool pg)
{
        char *out = malloc(strlen(text) + 1), *o = out, quote = 0;

        for (const char *c = text; out && *c; c++) {
                *o++ = *c;
                if (quote) {
                        quote = *c == quote ? 0 : quote;
                } else if (*c == '\'' || *c == '"') {
                        quote = *c;
                } else if (*c == '?' && c[1] >= '0' && c[1] <= '9') {
                        if (pg)
                                o[-1] = '$';
                        while (c[1] >= '0' && c[1] <= '9')
                                *o++ = *++c;
                        if (!pg && c[1] == ':' && c[2] == ':') {
                                c += 2;
                                while ((c[1] >= 'a' && c[1] <= 'z') || (c[1] == ' ' && !strncmp(c + 2, "precision", 9)))
                                        c++;
                        }
                }
        }
        if (out)
                *o = '\0';
        return out;
}
