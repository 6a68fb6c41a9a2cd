-- 001_init: the queue, the history and the server's own state.
--
-- Times are REAL unix seconds (UTC). Large texts live in side tables so that
-- the hot submissions table stays narrow: queue scans and history queries
-- never page through sources, logs or results. docs/store.md explains the
-- tables and views.

CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value BLOB NOT NULL
);

CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL DEFAULT 0
);
INSERT INTO counters(name, value) VALUES ('cache_hits', 0), ('cache_misses', 0);

CREATE TABLE tokens (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
        created_at REAL NOT NULL,
        revoked_at REAL,
        limits TEXT                                  -- JSON object or NULL
);

CREATE TABLE submissions (
        id INTEGER PRIMARY KEY,
        state TEXT NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'compiling', 'compiled', 'running', 'done')),
        verdict TEXT,                                -- NULL until done
        task TEXT,                                   -- NULL for compile-only without a task
        mode TEXT NOT NULL CHECK (mode IN ('full', 'compile')),
        priority INTEGER NOT NULL DEFAULT 0,         -- larger first
        token_id INTEGER NOT NULL DEFAULT 0,         -- 0: auth off
        run_id TEXT,                                 -- tags.run_id, copied for the index
        created_at REAL NOT NULL,
        started_at REAL,                             -- first claim
        finished_at REAL,
        attempts INTEGER NOT NULL DEFAULT 0,         -- claims, all stages
        stage_attempts INTEGER NOT NULL DEFAULT 0,   -- claims of the current stage
        lease_owner TEXT,
        lease_expires REAL,
        speedup REAL,
        cache_key BLOB,                              -- compile cache key once compiled
        tags TEXT                                    -- the request's tags object (JSON)
);
CREATE INDEX submissions_queue ON submissions(state, priority DESC, id);
CREATE INDEX submissions_task ON submissions(task, id);
CREATE INDEX submissions_verdict ON submissions(verdict, id);
CREATE INDEX submissions_created ON submissions(created_at);
CREATE INDEX submissions_run ON submissions(run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX submissions_token ON submissions(token_id, id);

-- Side tables, one row per submission, same id.
CREATE TABLE submission_requests (
        id INTEGER PRIMARY KEY,
        request TEXT NOT NULL                        -- normalized submission JSON, source inside
);
CREATE TABLE submission_compiles (
        id INTEGER PRIMARY KEY,
        compile TEXT NOT NULL                        -- compile section (log, kernels, resources)
);
CREATE TABLE submission_results (
        id INTEGER PRIMARY KEY,
        result TEXT NOT NULL                         -- result JSON (docs/internals.md)
);

-- Not-done submissions per token (token_id -1: all tokens), kept by triggers
-- so that quota checks read one row instead of counting the queue.
CREATE TABLE queue_counts (
        token_id INTEGER PRIMARY KEY,
        active INTEGER NOT NULL DEFAULT 0
);
INSERT INTO queue_counts(token_id, active) VALUES (-1, 0);

CREATE TRIGGER submissions_count_insert AFTER INSERT ON submissions
WHEN NEW.state != 'done'
BEGIN
        UPDATE queue_counts SET active = active + 1 WHERE token_id = -1;
        INSERT INTO queue_counts(token_id, active) VALUES (NEW.token_id, 1)
                ON CONFLICT(token_id) DO UPDATE SET active = active + 1;
END;

CREATE TRIGGER submissions_count_done AFTER UPDATE OF state ON submissions
WHEN NEW.state = 'done' AND OLD.state != 'done'
BEGIN
        UPDATE queue_counts SET active = active - 1 WHERE token_id IN (-1, OLD.token_id);
END;

CREATE TRIGGER submissions_count_delete AFTER DELETE ON submissions
WHEN OLD.state != 'done'
BEGIN
        UPDATE queue_counts SET active = active - 1 WHERE token_id IN (-1, OLD.token_id);
END;

-- Idempotency-Key: (token, key) -> body hash and the ids created.
-- ids is a JSON list of [first, last] ranges.
CREATE TABLE idempotency (
        id INTEGER PRIMARY KEY,
        token_id INTEGER NOT NULL,
        key TEXT NOT NULL,
        body_sha256 BLOB NOT NULL CHECK (length(body_sha256) = 32),
        ids TEXT NOT NULL,
        created_at REAL NOT NULL,
        UNIQUE (token_id, key)
);
CREATE INDEX idempotency_created ON idempotency(created_at);

-- Compile cache: key = sha256 of language, source, options, arch, name
-- expressions and NVRTC version.
CREATE TABLE compile_cache (
        key BLOB PRIMARY KEY CHECK (length(key) = 32),
        compile TEXT NOT NULL,                       -- compile RESULT JSON
        cubin BLOB,                                  -- NULL when the compile failed
        hits INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        last_used_at REAL NOT NULL
);

-- Dashboards.

CREATE VIEW v_submissions_hourly AS
SELECT strftime('%Y-%m-%dT%H:00:00Z', created_at, 'unixepoch') AS hour,
       coalesce(task, '') AS task,
       coalesce(verdict, 'pending') AS verdict,
       count(*) AS submissions
FROM submissions
GROUP BY 1, 2, 3;

CREATE VIEW v_speedup_by_task AS
SELECT task,
       count(*) AS n,
       min(speedup) AS min_speedup,
       max(speedup) AS max_speedup,
       avg(speedup) AS avg_speedup,
       exp(avg(ln(speedup))) AS geomean_speedup,
       sum(speedup < 0.5) AS lt_0_5,
       sum(speedup >= 0.5 AND speedup < 1.0) AS b_0_5_1,
       sum(speedup >= 1.0 AND speedup < 1.5) AS b_1_1_5,
       sum(speedup >= 1.5 AND speedup < 2.0) AS b_1_5_2,
       sum(speedup >= 2.0 AND speedup < 4.0) AS b_2_4,
       sum(speedup >= 4.0) AS ge_4
FROM submissions
WHERE verdict = 'correct' AND speedup > 0
GROUP BY task;

CREATE VIEW v_queue_depth AS
SELECT state, count(*) AS jobs, min(created_at) AS oldest_created_at
FROM submissions
WHERE state != 'done'
GROUP BY state;

CREATE VIEW v_task_summary AS
SELECT coalesce(task, '') AS task,
       count(*) AS submissions,
       sum(state = 'done') AS done,
       sum(verdict = 'correct') AS correct,
       sum(verdict = 'compile_error') AS compile_errors,
       CASE WHEN sum(state = 'done') > 0
            THEN CAST(sum(verdict = 'correct') AS REAL) / sum(state = 'done') END AS correct_rate,
       max(created_at) AS last_submitted_at
FROM submissions
GROUP BY 1;
