/*
 * store_sql - every statement the store's operations run, in both dialects,
 * one table indexed by StoreQuery (store_backend.h). Arguments are written
 * ?1, ?2, ... once, cast where PostgreSQL cannot infer their type
 * (?1::text); store_sql_render() gives each dialect its text ($1::text for
 * PostgreSQL, ?1 for SQLite). An entry with one text (.both) is the same
 * statement in both; one with two (.sqlite, .pg) says what differs; a NULL dialect: that backend
 * has no such statement (the operation's comment says what it does then).
 * The schema both run against is migrations/ (SQLite) and migrations/pg/.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/store_backend.h"

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
        "RETURNING id, stage_attempts, priority, token_id, task, mode, cache_key"

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
        "RETURNING u.id, u.stage_attempts, u.priority, u.token_id, u.task, u.mode, u.cache_key"
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
#define DASH(Q) [STORE_Q_DASH_FIRST + STORE_DASH_##Q]

static const StoreSql sql[STORE_Q__COUNT] = {
        [STORE_Q_COUNT_ACTIVE] = {
                .sqlite = "SELECT coalesce((SELECT active FROM queue_counts WHERE token_id = ?1), 0)",
                /* Locked until the commit: every insert of the fleet takes -1, then the token's. */
                .pg = "SELECT active FROM queue_counts WHERE token_id = ?1 FOR UPDATE" },
        [STORE_Q_ADD_ACTIVE] = {
                .sqlite = "INSERT INTO queue_counts(token_id, active) VALUES (?1, ?2) "
                          "ON CONFLICT(token_id) DO UPDATE SET active = active + excluded.active",
                .pg = "INSERT INTO queue_counts AS q (token_id, active) VALUES (?1, ?2) "
                      "ON CONFLICT (token_id) DO UPDATE SET active = q.active + excluded.active" },
        [STORE_Q_ADD_TASK] = {
                .sqlite = "INSERT INTO task_stats(task, submissions) VALUES (coalesce(?1, ''), ?2) "
                          "ON CONFLICT(task) DO UPDATE SET submissions = submissions + excluded.submissions",
                .pg = "INSERT INTO task_stats AS t (task, submissions) VALUES (?1, ?2) "
                      "ON CONFLICT (task) DO UPDATE SET submissions = t.submissions + excluded.submissions" },
        [STORE_Q_IDEM_GET] = { "SELECT body_sha256, ids FROM idempotency WHERE token_id = ?1 AND key = ?2" },
        [STORE_Q_IDEM_PUT] = { "INSERT INTO idempotency(token_id, key, body_sha256, ids, created_at) "
                               "VALUES (?1, ?2, ?3, ?4, ?5)" },
        [STORE_Q_PRUNE_IDEM] = { "DELETE FROM idempotency WHERE created_at < ?1" },
        /* PostgreSQL inserts many rows a statement (its StoreOps.insert_rows). No RETURNING id
         * (StoreOps.inserted_id): SQLite materializes RETURNING's rows, a third of a row's insert. */
        [STORE_Q_INSERT_SUB] = { .sqlite = "INSERT INTO submissions(state, task, mode, priority, token_id, run_id, "
                                           "created_at, tags) VALUES ('queued', ?1, ?2, ?3, ?4, ?5, ?6, ?7)" },
        [STORE_Q_INSERT_REQ] = { .sqlite = "INSERT INTO submission_requests(id, request) VALUES (?1, ?2)" },
        [STORE_Q_DRAW_IDS] = { .pg = "SELECT nextval(pg_get_serial_sequence('submissions', 'id')) "
                                     "FROM generate_series(1, ?1::integer) ORDER BY 1" },
        [STORE_Q_ANY_QUEUED] = { "SELECT 1 FROM submissions WHERE state = 'queued' LIMIT 1" },
        [STORE_Q_ANY_COMPILED] = { "SELECT 1 FROM submissions WHERE state = 'compiled' LIMIT 1" },
        [STORE_Q_CLAIM_COMPILE] = { .sqlite = SQ_CLAIM("compiling", "queued", "compile_at"),
                                    .pg = PG_CLAIM("compiling", "queued", "compile_at") },
        [STORE_Q_CLAIM_RUN] = { .sqlite = SQ_CLAIM("running", "compiled", "run_at"),
                                .pg = PG_CLAIM("running", "compiled", "run_at") },
        [STORE_Q_CLAIM_ANY_COMPILE] = { .pg = PG_CLAIM_ANY("compiling", "queued", "compile_at") },
        [STORE_Q_CLAIM_ANY_RUN] = { .pg = PG_CLAIM_ANY("running", "compiled", "run_at") },
        [STORE_Q_SERVED_COMPILE] = {
                .sqlite = "INSERT INTO token_service(token_id, compile_at) VALUES (?1, ?2) "
                          "ON CONFLICT(token_id) DO UPDATE SET compile_at = excluded.compile_at",
                .pg = PG_SERVED("compile_at") },
        [STORE_Q_SERVED_RUN] = {
                .sqlite = "INSERT INTO token_service(token_id, run_at) VALUES (?1, ?2) "
                          "ON CONFLICT(token_id) DO UPDATE SET run_at = excluded.run_at",
                .pg = PG_SERVED("run_at") },
        [STORE_Q_SERVED_NEW_COMPILE] = {
                .pg = "INSERT INTO token_service(token_id, compile_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING" },
        [STORE_Q_SERVED_NEW_RUN] = {
                .pg = "INSERT INTO token_service(token_id, run_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING" },
        [STORE_Q_GET_REQ] = { "SELECT request FROM submission_requests WHERE id = ?1" },
        [STORE_Q_GET_COMPILE] = { "SELECT compile FROM submission_compiles WHERE id = ?1" },
        [STORE_Q_HEARTBEAT] = { "UPDATE submissions SET lease_expires = ?3 WHERE id = ?1 AND lease_owner = ?2 "
                                "AND state IN ('compiling', 'running')" },
        [STORE_Q_HEARTBEAT_OWNER] = {
                .sqlite = "UPDATE submissions SET lease_expires = ?2 WHERE lease_owner = ?1 "
                          "AND state IN ('compiling', 'running')",
                /* SKIP LOCKED: a row being finished right now needs no extension, and waiting on it
                 * would hold up the caller (the listener thread renews leases too). */
                .pg = "UPDATE submissions SET lease_expires = ?2 WHERE id IN (SELECT id FROM submissions "
                      "WHERE lease_owner = ?1 AND state IN ('compiling', 'running') FOR UPDATE SKIP LOCKED)" },
        /* One host (SQLite): no hosts table. */
        [STORE_Q_HOST_BEAT] = { .pg = "INSERT INTO hosts AS h (host_id, started_at, last_seen) VALUES (?1, ?2, ?2) "
                                      "ON CONFLICT (host_id) DO UPDATE SET last_seen = excluded.last_seen" },
        [STORE_Q_SET_KEY] = { "UPDATE submissions SET cache_key = ?2 WHERE id = ?1" },
        [STORE_Q_SET_COMPILED] = { "UPDATE submissions SET state = 'compiled', lease_owner = NULL, lease_expires = NULL, "
                                   "stage_attempts = 0 WHERE id = ?1 AND state = 'compiling' "
                                   "AND (?2::text IS NULL OR lease_owner = ?2::text)" },
        [STORE_Q_PUT_COMPILE] = {
                .sqlite = "INSERT OR REPLACE INTO submission_compiles(id, compile) VALUES (?1, ?2)",
                .pg = "INSERT INTO submission_compiles(id, compile) VALUES (?1, ?2) "
                      "ON CONFLICT (id) DO UPDATE SET compile = excluded.compile" },
        [STORE_Q_FINISH] = { "UPDATE submissions SET state = 'done', verdict = ?2, speedup = ?3, finished_at = ?4, "
                             "lease_owner = NULL, lease_expires = NULL WHERE id = ?1 AND state <> 'done' "
                             "AND (?5::text IS NULL OR (lease_owner = ?5::text AND state IN ('compiling', 'running')))" },
        [STORE_Q_PUT_RESULT] = {
                .sqlite = "INSERT OR REPLACE INTO submission_results(id, result) VALUES (?1, ?2)",
                /* The rollups are fed by the INSERT trigger only, so a replaced result is not counted twice. */
                .pg = "INSERT INTO submission_results(id, result) VALUES (?1, ?2) "
                      "ON CONFLICT (id) DO UPDATE SET result = excluded.result" },
        [STORE_Q_REQUEUE] = { "UPDATE submissions SET state = ?3, lease_owner = NULL, lease_expires = NULL "
                              "WHERE id = ?1 AND lease_owner = ?2 AND state = ?4" },
        [STORE_Q_TOKEN_OF] = { "SELECT token_id FROM submissions WHERE id = ?1" },
        /* PostgreSQL: locked, skipping rows another host's reaper holds (two reapers split them). */
        [STORE_Q_LEASES_EXPIRED] = { .sqlite = LEASE_COLUMNS "AND lease_expires < ?1",
                                     .pg = LEASE_COLUMNS "AND lease_expires < ?1 FOR UPDATE SKIP LOCKED" },
        /* SQLite: one host, every lease is its own (?1 is not needed). */
        [STORE_Q_LEASES_HOST] = { .sqlite = LEASE_COLUMNS "AND ?1 IS NOT NULL",
                                  .pg = LEASE_COLUMNS "AND starts_with(lease_owner, ?1) FOR UPDATE SKIP LOCKED" },
        [STORE_Q_BACK_ONE] = { "UPDATE submissions SET state = CASE state WHEN 'compiling' THEN 'queued' "
                               "ELSE 'compiled' END, lease_owner = NULL, lease_expires = NULL "
                               "WHERE id = ?1 AND state IN ('compiling', 'running')" },
        [STORE_Q_CANCEL] = { "UPDATE submissions SET state = 'done', verdict = 'cancelled', finished_at = ?3 "
                             "WHERE id = ?1 AND state IN ('queued', 'compiled') AND (?2 = 0 OR token_id = ?2) "
                             "RETURNING task" },
        [STORE_Q_GET_SUB] = { "SELECT " SUB_COLUMNS ", r.result FROM submissions s "
                              "LEFT JOIN submission_results r ON r.id = s.id WHERE s.id = ?1" },
        [STORE_Q_CACHE_GET] = { "SELECT compile, cubin FROM compile_cache WHERE key = ?1" },
        [STORE_Q_CACHE_HIT] = { "UPDATE compile_cache SET hits = hits + 1, last_used_at = ?2 WHERE key = ?1" },
        [STORE_Q_CACHE_PUT] = { "INSERT INTO compile_cache(key, compile, cubin, hits, created_at, last_used_at) "
                                "VALUES (?1, ?2, ?3, 0, ?4, ?4) ON CONFLICT(key) DO UPDATE SET "
                                "compile = excluded.compile, cubin = excluded.cubin, "
                                "last_used_at = excluded.last_used_at" },
        /* Of the 64 least recently used, those needed to shed ?1 bytes. */
        [STORE_Q_CACHE_PRUNE] = {
                .sqlite = "DELETE FROM compile_cache WHERE key IN (SELECT key FROM (SELECT key, "
                          "sum(sz) OVER (ORDER BY last_used_at, key ROWS UNBOUNDED PRECEDING) - sz AS before "
                          "FROM (SELECT key, last_used_at, length(CAST(compile AS BLOB)) + "
                          "coalesce(length(cubin), 0) AS sz FROM compile_cache "
                          "ORDER BY last_used_at, key LIMIT 64)) WHERE before < ?1)",
                .pg = "DELETE FROM compile_cache WHERE key IN (SELECT key FROM (SELECT key, "
                      "sum(sz) OVER (ORDER BY last_used_at, key ROWS UNBOUNDED PRECEDING) - sz AS before "
                      "FROM (SELECT key, last_used_at, octet_length(compile) + coalesce(octet_length(cubin), 0) "
                      "AS sz FROM compile_cache ORDER BY last_used_at, key LIMIT 64) a) b "
                      "WHERE before < ?1::bigint)" },
        [STORE_Q_COUNTER] = { "SELECT value FROM counters WHERE name = ?1" },
        [STORE_Q_COUNTER_ADD] = { "UPDATE counters SET value = value + ?2 WHERE name = ?1" },
        [STORE_Q_TOKEN_CREATE] = { "INSERT INTO tokens(name, hash, created_at, limits) VALUES (?1, ?2, ?3, ?4) "
                                   "RETURNING id" },
        [STORE_Q_TOKEN_REVOKE] = { "UPDATE tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL" },
        [STORE_Q_TOKEN_LOOKUP] = { "SELECT id, limits FROM tokens WHERE hash = ?1 AND revoked_at IS NULL" },
        [STORE_Q_TOKEN_LIST] = { "SELECT id, name, created_at, revoked_at, limits FROM tokens ORDER BY id" },
        [STORE_Q_SECRET] = { "SELECT value FROM meta WHERE key = 'secret'" },
        [STORE_Q_SECRET_PUT] = { "INSERT INTO meta(key, value) VALUES ('secret', ?1) ON CONFLICT DO NOTHING" },
        /* Stats read the trigger-kept aggregates and the not-done part of the queue index. */
        [STORE_Q_STATS_STATES] = { "SELECT state, count(*) FROM submissions "
                                   "WHERE state IN ('queued', 'compiling', 'compiled', 'running') GROUP BY state "
                                   "UNION ALL SELECT 'done', coalesce(sum(done), 0) FROM task_stats" },
        [STORE_Q_STATS_VERDICTS] = { "SELECT verdict, n FROM verdict_counts WHERE n > 0 ORDER BY verdict" },
        [STORE_Q_STATS_TASKS] = {
                .sqlite = "SELECT nullif(task, ''), submissions, done, correct, CASE WHEN done > 0 "
                          "THEN CAST(correct AS REAL) / done END FROM task_stats ORDER BY task",
                .pg = "SELECT nullif(task, ''), submissions, done, correct, CASE WHEN done > 0 "
                      "THEN correct::double precision / done END FROM task_stats ORDER BY task" },
        [STORE_Q_STATS_MEDIANS] = { "SELECT task, bucket, sum(n) OVER (PARTITION BY task ORDER BY bucket), "
                                    "sum(n) OVER (PARTITION BY task) FROM task_speedups ORDER BY task, bucket" },
        [STORE_Q_CACHE_ENTRIES] = { "SELECT count(*) FROM compile_cache" },
        [STORE_Q_DEPTH] = { "SELECT active FROM queue_counts WHERE token_id = -1" },
        [STORE_Q_SUBMITTED] = { "SELECT coalesce(sum(submissions), 0) FROM task_stats" },
        [STORE_Q_QUEUE_DEPTH] = { "SELECT state, count(*) FROM submissions "
                                  "WHERE state IN ('queued', 'compiled', 'running') GROUP BY state" },
        [STORE_Q_VIEW_EXISTS] = {
                .sqlite = "SELECT 1 FROM sqlite_schema WHERE type = 'view' AND name = ?1",
                .pg = "SELECT 1 FROM pg_views WHERE schemaname = current_schema() AND viewname = ?1" },

        /* Dashboards: over the views of migrations/006_dashboard.sql and 007 (docs/dashboard.md). */
        /* The IN list walks the queue index per state; the view's "state != 'done'" alone would scan every done row. */
        DASH(QUEUE) = { "SELECT state, jobs, oldest_created_at FROM v_queue_depth "
                        "WHERE state IN ('queued', 'compiling', 'compiled', 'running')" },
        DASH(ACTIVITY) = { "SELECT minute_start, verdict, n, latency_sum_s, compiles, compile_ms_sum, cache_hits, "
                           "cache_misses FROM v_activity_minutely WHERE minute_start >= ?1::double precision "
                           "ORDER BY minute_start" },
        DASH(GPU_BUSY) = { "SELECT minute_start, gpu, jobs, busy_ms, busy_fraction FROM v_gpu_busy_minutely "
                           "WHERE minute_start >= ?1::double precision ORDER BY minute_start, gpu" },
        DASH(RUNS) = {
                .sqlite = "SELECT * FROM v_run_summary WHERE ?1 IS NULL OR instr(run_id, ?1) > 0 "
                          "ORDER BY last_finished_at DESC, run_id LIMIT ?2 OFFSET ?3",
                .pg = "SELECT * FROM v_run_summary WHERE ?1::text IS NULL OR strpos(run_id, ?1::text) > 0 "
                      "ORDER BY last_finished_at DESC, run_id LIMIT ?2::bigint OFFSET ?3::bigint" },
        DASH(RUN) = { "SELECT * FROM v_run_summary WHERE run_id = ?1::text" },
        DASH(RUN_STEPS) = { "SELECT * FROM v_run_steps WHERE run_id = ?1::text "
                            "AND coalesce(step, -1) BETWEEN ?2::bigint AND ?3::bigint ORDER BY coalesce(step, -1)" },
        DASH(RUN_SPEEDUPS) = { "SELECT step, bucket, speedup_lo, speedup_hi, n FROM v_run_step_speedups "
                               "WHERE run_id = ?1::text AND coalesce(step, -1) BETWEEN ?2::bigint AND ?3::bigint "
                               "ORDER BY coalesce(step, -1), bucket" },
        /* best_id and best_step: those of the row with the highest best_speedup (SQLite's bare columns). */
        DASH(RUN_TASKS) = {
                .sqlite = "SELECT task, sum(evaluated) AS samples, sum(compiled) AS compiled, "
                          "sum(correct) AS correct, max(best_speedup) AS best_speedup, best_id, step AS best_step, "
                          "sum(checked) AS checked FROM v_run_step_tasks WHERE run_id = ?1 "
                          "AND coalesce(step, -1) BETWEEN ?2 AND ?3 GROUP BY task ORDER BY task",
                .pg = "SELECT task, sum(evaluated) AS samples, sum(compiled) AS compiled, "
                      "sum(correct) AS correct, max(best_speedup) AS best_speedup, "
                      "(array_agg(best_id ORDER BY best_speedup DESC NULLS LAST))[1] AS best_id, "
                      "(array_agg(step ORDER BY best_speedup DESC NULLS LAST))[1] AS best_step, "
                      "sum(checked) AS checked FROM v_run_step_tasks WHERE run_id = ?1::text "
                      "AND coalesce(step, -1) BETWEEN ?2::bigint AND ?3::bigint GROUP BY task ORDER BY task" },
        DASH(TASKS) = {
                .sqlite = "SELECT * FROM v_task_summary WHERE ?1 IS NULL OR instr(task, ?1) > 0 "
                          "ORDER BY submissions DESC, task LIMIT ?2 OFFSET ?3",
                .pg = "SELECT * FROM v_task_summary WHERE ?1::text IS NULL OR strpos(task, ?1::text) > 0 "
                      "ORDER BY submissions DESC, task LIMIT ?2::bigint OFFSET ?3::bigint" },
        DASH(TASK) = { "SELECT * FROM v_task_summary WHERE task = ?1::text" },
        DASH(TASK_VERDICTS) = { "SELECT verdict, n FROM v_task_verdicts WHERE task = ?1::text ORDER BY n DESC, verdict" },
        DASH(TASK_SPEEDUPS) = { "SELECT bucket, speedup_lo, speedup_hi, n FROM v_task_speedup_hist "
                                "WHERE task = ?1::text ORDER BY bucket" },
        DASH(LEADERBOARD) = { "SELECT id, speedup, run_id, step, sample, turn, finished_at FROM v_task_leaderboard "
                              "WHERE task = ?1::text ORDER BY speedup DESC, id LIMIT ?2::bigint OFFSET ?3::bigint" },
        DASH(TURN) = { TURN_COLUMNS "WHERE id = ?1::bigint" },
        DASH(CHILDREN) = { TURN_COLUMNS "WHERE parent = ?1::bigint AND (?2::bigint < 0 OR token_id = ?2::bigint) "
                           "ORDER BY id LIMIT ?3::bigint" },
        DASH(REQUEST) = { "SELECT request FROM submission_requests WHERE id = ?1::bigint" },
        DASH(HISTOGRAMS) = { "SELECT metric, label, le, n, count, sum FROM v_metric_histograms "
                             "ORDER BY metric, label, le IS NULL, le" },
        /* Migration 007: the verdict mix per step; the task browser's figures for a page of library names. */
        DASH(RUN_VERDICTS) = { "SELECT step, verdict, n FROM v_run_step_verdicts WHERE run_id = ?1::text "
                               "AND coalesce(step, -1) BETWEEN ?2::bigint AND ?3::bigint ORDER BY coalesce(step, -1), verdict" },
        DASH(TASKS_NAMED) = {
                .sqlite = "SELECT * FROM v_task_summary WHERE task IN (SELECT value FROM json_each(?1))",
                .pg = "SELECT * FROM v_task_summary WHERE task IN (SELECT json_array_elements_text(?1::json))" },
        DASH(REFERENCES) = {
                .sqlite = "SELECT * FROM v_task_reference_times WHERE task IN (SELECT value FROM json_each(?1)) "
                          "ORDER BY task, gpu_name, shape",
                .pg = "SELECT * FROM v_task_reference_times WHERE task IN "
                      "(SELECT json_array_elements_text(?1::json)) ORDER BY task, gpu_name, shape" },
};

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
