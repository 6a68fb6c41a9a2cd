-- 006_dashboard: what the built-in page (docs/dashboard.md), Grafana and SQL
-- users read. The page's JSON routes query the views below and nothing else,
-- so a figure on the page is the figure `sqlite3 kevald.db 'SELECT ...'` gives.
--
-- Every aggregate is kept by triggers when a result is stored (never by a
-- scan of the history), so each view answers in constant time per row it
-- returns however long the history grows. The hook is the insert into
-- submission_results: store_finish() (and the reaper, and cancel) first move
-- the row to 'done', then store its result, exactly once per submission.
-- That insert copies the few numbers the dashboards need out of the result
-- JSON into job_metrics (one JSON parse per job); job_metrics' own insert
-- trigger adds them to the rollups. A result that is not JSON (the store
-- never writes one) is skipped rather than failing the finish.

-- Tag columns, computed from tags when read (nothing stored, no cost at insert).
ALTER TABLE submissions ADD COLUMN step INTEGER GENERATED ALWAYS AS (json_extract(tags, '$.step')) VIRTUAL;
ALTER TABLE submissions ADD COLUMN sample INTEGER GENERATED ALWAYS AS (json_extract(tags, '$.sample')) VIRTUAL;
ALTER TABLE submissions ADD COLUMN turn INTEGER GENERATED ALWAYS AS (json_extract(tags, '$.turn')) VIRTUAL;
ALTER TABLE submissions ADD COLUMN parent INTEGER GENERATED ALWAYS AS (json_extract(tags, '$.parent')) VIRTUAL;

-- A multi-turn run's children of a submission; only rows with a parent are indexed.
CREATE INDEX submissions_parent ON submissions(parent) WHERE parent IS NOT NULL;
-- A task's fastest correct kernels; a row enters it when it finishes correct.
CREATE INDEX submissions_leaderboard ON submissions(task, speedup DESC) WHERE verdict = 'correct';

-- One row per finished submission: the numbers of its result the dashboards chart.
CREATE TABLE job_metrics (
        id INTEGER PRIMARY KEY,                      -- submissions.id
        finished_at REAL NOT NULL,
        mode TEXT NOT NULL,
        verdict TEXT NOT NULL,
        task TEXT NOT NULL,                          -- '' without a task
        run_id TEXT,                                 -- tags.run_id
        step INTEGER NOT NULL,                       -- tags.step, -1 without one
        compiled INTEGER NOT NULL,                   -- reward_fields.compiled
        speedup REAL,                                -- correct submissions only
        latency_s REAL,                              -- created to finished
        compile_ms REAL,                             -- this job's compile; NULL on a cache hit
        cache_hit INTEGER,                           -- 1 hit, 0 miss, NULL when nothing was compiled
        gpu INTEGER,                                 -- result.gpu.index: the host's GPU that ran it
        gpu_busy_ms REAL,                            -- event-timed GPU time of the job's plan executions
        gpu_wall_ms REAL                             -- the GPU worker's wall time for the job
);

-- Per minute (minute_start = unix seconds, a multiple of 60) and verdict.
CREATE TABLE activity_minutely (
        minute_start INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        latency_sum_s REAL NOT NULL DEFAULT 0,
        compiles INTEGER NOT NULL DEFAULT 0,         -- cache misses that compiled
        compile_ms_sum REAL NOT NULL DEFAULT 0,
        cache_hits INTEGER NOT NULL DEFAULT 0,
        cache_misses INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (minute_start, verdict)
) WITHOUT ROWID;

-- Per minute and GPU: jobs and event-timed busy time.
CREATE TABLE gpu_minutely (
        minute_start INTEGER NOT NULL,
        gpu INTEGER NOT NULL,
        jobs INTEGER NOT NULL DEFAULT 0,
        busy_ms REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (minute_start, gpu)
) WITHOUT ROWID;

-- RL runs (tags.run_id). Cancelled submissions are not counted; internal
-- errors (infrastructure faults, retried) are counted apart and left out of
-- the rates.
CREATE TABLE run_summary (
        run_id TEXT PRIMARY KEY,
        n INTEGER NOT NULL DEFAULT 0,                -- evaluated: done, not cancelled, not internal_error
        compiled INTEGER NOT NULL DEFAULT 0,
        correct INTEGER NOT NULL DEFAULT 0,
        internal_errors INTEGER NOT NULL DEFAULT 0,
        min_step INTEGER,
        max_step INTEGER,
        first_finished_at REAL,
        last_finished_at REAL
) WITHOUT ROWID;

-- Per run, step and task: evaluated samples, compiled, correct, and the best
-- correct kernel of that step (reward = speedup when correct, else 0).
CREATE TABLE run_step_tasks (
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,                       -- -1: no step tag
        task TEXT NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        compiled INTEGER NOT NULL DEFAULT 0,
        correct INTEGER NOT NULL DEFAULT 0,
        speedup_sum REAL NOT NULL DEFAULT 0,
        log_speedup_sum REAL NOT NULL DEFAULT 0,
        best_speedup REAL,
        best_id INTEGER,
        PRIMARY KEY (run_id, step, task)
) WITHOUT ROWID;

-- Per run and step, correct submissions by speedup bucket floor(8 * log2(speedup)),
-- clamped to [-80, 80] (as task_speedups).
CREATE TABLE run_step_speedups (
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        bucket INTEGER NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, step, bucket)
) WITHOUT ROWID;

-- Done submissions per task and verdict.
CREATE TABLE task_verdicts (
        task TEXT NOT NULL,
        verdict TEXT NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (task, verdict)
) WITHOUT ROWID;

-- Prometheus histograms (GET /metrics): bucket bounds are data. metric_hist
-- holds per-bucket counts (not cumulative; le 9e999 is +Inf), metric_sums
-- the count and sum per series.
CREATE TABLE metric_buckets (
        metric TEXT NOT NULL,
        le REAL NOT NULL,
        PRIMARY KEY (metric, le)
) WITHOUT ROWID;
CREATE TABLE metric_hist (
        metric TEXT NOT NULL,
        label TEXT NOT NULL,                         -- the series' label value ('' for none)
        le REAL NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (metric, label, le)
) WITHOUT ROWID;
CREATE TABLE metric_sums (
        metric TEXT NOT NULL,
        label TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 0,
        sum REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (metric, label)
) WITHOUT ROWID;

INSERT INTO metric_buckets(metric, le)
SELECT 'submission_latency_seconds', value FROM json_each('[0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 9e999]')
UNION ALL
SELECT 'compile_duration_seconds', value FROM json_each('[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 9e999]')
UNION ALL
SELECT 'job_gpu_busy_seconds', value FROM json_each('[0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 9e999]');

CREATE TRIGGER submission_results_job_metrics AFTER INSERT ON submission_results
BEGIN
        INSERT OR IGNORE INTO job_metrics(id, finished_at, mode, verdict, task, run_id, step, compiled, speedup,
                                          latency_s, compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms)
        SELECT s.id, coalesce(s.finished_at, s.created_at), s.mode,
               coalesce(s.verdict, json_extract(NEW.result, '$.verdict'), 'unknown'),
               coalesce(s.task, ''), s.run_id, coalesce(s.step, -1),
               coalesce(json_extract(NEW.result, '$.reward_fields.compiled'), 0),
               CASE WHEN s.verdict = 'correct' AND s.speedup > 0 THEN s.speedup END,
               s.finished_at - s.created_at,
               CASE WHEN json_extract(NEW.result, '$.compile.cache_hit') = 0
                    THEN json_extract(NEW.result, '$.compile.compile_ms') END,
               json_extract(NEW.result, '$.compile.cache_hit'),
               json_extract(NEW.result, '$.gpu.index'),
               json_extract(NEW.result, '$.gpu_busy_ms'),
               json_extract(NEW.result, '$.wall_ms')
        FROM submissions s WHERE s.id = NEW.id AND s.state = 'done' AND json_valid(NEW.result);
END;

CREATE TRIGGER job_metrics_rollup AFTER INSERT ON job_metrics
BEGIN
        INSERT INTO activity_minutely(minute_start, verdict, n, latency_sum_s, compiles, compile_ms_sum,
                                      cache_hits, cache_misses)
        VALUES (CAST(NEW.finished_at / 60 AS INTEGER) * 60, NEW.verdict, 1, coalesce(NEW.latency_s, 0),
                NEW.compile_ms IS NOT NULL, coalesce(NEW.compile_ms, 0), coalesce(NEW.cache_hit = 1, 0),
                coalesce(NEW.cache_hit = 0, 0))
        ON CONFLICT(minute_start, verdict) DO UPDATE SET n = n + 1,
                latency_sum_s = latency_sum_s + excluded.latency_sum_s,
                compiles = compiles + excluded.compiles, compile_ms_sum = compile_ms_sum + excluded.compile_ms_sum,
                cache_hits = cache_hits + excluded.cache_hits, cache_misses = cache_misses + excluded.cache_misses;

        INSERT INTO gpu_minutely(minute_start, gpu, jobs, busy_ms)
        SELECT CAST(NEW.finished_at / 60 AS INTEGER) * 60, NEW.gpu, 1, coalesce(NEW.gpu_busy_ms, 0)
        WHERE NEW.gpu IS NOT NULL
        ON CONFLICT(minute_start, gpu) DO UPDATE SET jobs = jobs + 1, busy_ms = busy_ms + excluded.busy_ms;

        INSERT INTO task_verdicts(task, verdict, n) VALUES (NEW.task, NEW.verdict, 1)
        ON CONFLICT(task, verdict) DO UPDATE SET n = n + 1;

        INSERT INTO run_summary(run_id, n, compiled, correct, internal_errors, min_step, max_step,
                                first_finished_at, last_finished_at)
        SELECT NEW.run_id, NEW.verdict != 'internal_error', NEW.verdict != 'internal_error' AND NEW.compiled,
               NEW.verdict = 'correct', NEW.verdict = 'internal_error', nullif(NEW.step, -1),
               nullif(NEW.step, -1), NEW.finished_at, NEW.finished_at
        WHERE NEW.run_id IS NOT NULL AND NEW.verdict != 'cancelled'
        ON CONFLICT(run_id) DO UPDATE SET n = n + excluded.n, compiled = compiled + excluded.compiled,
                correct = correct + excluded.correct, internal_errors = internal_errors + excluded.internal_errors,
                min_step = coalesce(min(min_step, excluded.min_step), min_step, excluded.min_step),
                max_step = coalesce(max(max_step, excluded.max_step), max_step, excluded.max_step),
                first_finished_at = min(first_finished_at, excluded.first_finished_at),
                last_finished_at = max(last_finished_at, excluded.last_finished_at);

        INSERT INTO run_step_tasks(run_id, step, task, n, compiled, correct, speedup_sum, log_speedup_sum,
                                   best_speedup, best_id)
        SELECT NEW.run_id, NEW.step, NEW.task, 1, NEW.compiled, NEW.verdict = 'correct',
               coalesce(NEW.speedup, 0), coalesce(ln(NEW.speedup), 0), NEW.speedup,
               CASE WHEN NEW.speedup IS NOT NULL THEN NEW.id END
        WHERE NEW.run_id IS NOT NULL AND NEW.verdict NOT IN ('cancelled', 'internal_error')
        ON CONFLICT(run_id, step, task) DO UPDATE SET n = n + 1, compiled = compiled + excluded.compiled,
                correct = correct + excluded.correct, speedup_sum = speedup_sum + excluded.speedup_sum,
                log_speedup_sum = log_speedup_sum + excluded.log_speedup_sum,
                best_id = CASE WHEN excluded.best_speedup > coalesce(best_speedup, 0) THEN excluded.best_id
                               ELSE best_id END,
                best_speedup = max(coalesce(best_speedup, 0), coalesce(excluded.best_speedup, 0));

        INSERT INTO run_step_speedups(run_id, step, bucket, n)
        SELECT NEW.run_id, NEW.step, max(-80, min(80, CAST(floor(8 * log2(NEW.speedup)) AS INTEGER))), 1
        WHERE NEW.run_id IS NOT NULL AND NEW.speedup IS NOT NULL
        ON CONFLICT(run_id, step, bucket) DO UPDATE SET n = n + 1;

        INSERT INTO metric_hist(metric, label, le, n)
        SELECT 'submission_latency_seconds', NEW.mode,
               (SELECT min(le) FROM metric_buckets WHERE metric = 'submission_latency_seconds'
                AND le >= NEW.latency_s), 1
        WHERE NEW.latency_s IS NOT NULL AND NEW.verdict != 'cancelled'
        UNION ALL
        SELECT 'compile_duration_seconds', '',
               (SELECT min(le) FROM metric_buckets WHERE metric = 'compile_duration_seconds'
                AND le >= NEW.compile_ms / 1000.0), 1
        WHERE NEW.compile_ms IS NOT NULL
        UNION ALL
        SELECT 'job_gpu_busy_seconds', '',
               (SELECT min(le) FROM metric_buckets WHERE metric = 'job_gpu_busy_seconds'
                AND le >= NEW.gpu_busy_ms / 1000.0), 1
        WHERE NEW.gpu_busy_ms IS NOT NULL
        ON CONFLICT(metric, label, le) DO UPDATE SET n = n + 1;

        INSERT INTO metric_sums(metric, label, count, sum)
        SELECT 'submission_latency_seconds', NEW.mode, 1, NEW.latency_s
        WHERE NEW.latency_s IS NOT NULL AND NEW.verdict != 'cancelled'
        UNION ALL
        SELECT 'compile_duration_seconds', '', 1, NEW.compile_ms / 1000.0 WHERE NEW.compile_ms IS NOT NULL
        UNION ALL
        SELECT 'job_gpu_busy_seconds', '', 1, NEW.gpu_busy_ms / 1000.0 WHERE NEW.gpu_busy_ms IS NOT NULL
        ON CONFLICT(metric, label) DO UPDATE SET count = count + 1, sum = sum + excluded.sum;
END;

-- The history so far (the triggers above fill the rollups row by row).
INSERT OR IGNORE INTO job_metrics(id, finished_at, mode, verdict, task, run_id, step, compiled, speedup,
                                  latency_s, compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms)
SELECT s.id, coalesce(s.finished_at, s.created_at), s.mode, coalesce(s.verdict, 'unknown'), coalesce(s.task, ''),
       s.run_id, coalesce(s.step, -1), coalesce(json_extract(r.result, '$.reward_fields.compiled'), 0),
       CASE WHEN s.verdict = 'correct' AND s.speedup > 0 THEN s.speedup END, s.finished_at - s.created_at,
       CASE WHEN json_extract(r.result, '$.compile.cache_hit') = 0
            THEN json_extract(r.result, '$.compile.compile_ms') END,
       json_extract(r.result, '$.compile.cache_hit'), json_extract(r.result, '$.gpu.index'),
       json_extract(r.result, '$.gpu_busy_ms'), json_extract(r.result, '$.wall_ms')
FROM submissions s JOIN submission_results r ON r.id = s.id
WHERE s.state = 'done' AND json_valid(r.result)
ORDER BY s.id;

-- ---- views ----------------------------------------------------------------

CREATE VIEW v_activity_minutely AS
SELECT minute_start, strftime('%Y-%m-%dT%H:%M:00Z', minute_start, 'unixepoch') AS minute, verdict, n,
       latency_sum_s, CASE WHEN n > 0 THEN latency_sum_s / n END AS latency_mean_s,
       compiles, compile_ms_sum, cache_hits, cache_misses
FROM activity_minutely;

CREATE VIEW v_gpu_busy_minutely AS
SELECT minute_start, strftime('%Y-%m-%dT%H:%M:00Z', minute_start, 'unixepoch') AS minute, gpu, jobs, busy_ms,
       busy_ms / 60000.0 AS busy_fraction
FROM gpu_minutely;

CREATE VIEW v_job_metrics AS
SELECT id, finished_at, strftime('%Y-%m-%dT%H:%M:%fZ', finished_at, 'unixepoch') AS finished, mode, verdict,
       nullif(task, '') AS task, run_id, nullif(step, -1) AS step, compiled, speedup, latency_s, compile_ms,
       cache_hit, gpu, gpu_busy_ms, gpu_wall_ms
FROM job_metrics;

CREATE VIEW v_run_summary AS
SELECT run_id, n AS evaluated, compiled, correct, internal_errors,
       CASE WHEN n > 0 THEN CAST(correct AS REAL) / n END AS correct_rate,
       min_step, max_step, first_finished_at, last_finished_at
FROM run_summary;

CREATE VIEW v_run_steps AS
SELECT run_id, nullif(step, -1) AS step, sum(n) AS evaluated, sum(compiled) AS compiled, sum(correct) AS correct,
       CAST(sum(correct) AS REAL) / sum(n) AS correct_rate,
       sum(speedup_sum) / sum(n) AS mean_reward,
       CASE WHEN sum(correct) > 0 THEN exp(sum(log_speedup_sum) / sum(correct)) END AS geomean_speedup,
       max(best_speedup) AS best_speedup, count(*) AS tasks
FROM run_step_tasks
GROUP BY run_id, step;

CREATE VIEW v_run_step_tasks AS
SELECT run_id, nullif(step, -1) AS step, nullif(task, '') AS task, n AS evaluated, compiled, correct,
       CAST(correct AS REAL) / n AS correct_rate, speedup_sum / n AS mean_reward,
       CASE WHEN correct > 0 THEN exp(log_speedup_sum / correct) END AS geomean_speedup,
       best_speedup, best_id
FROM run_step_tasks;

CREATE VIEW v_run_step_speedups AS
SELECT run_id, nullif(step, -1) AS step, bucket, pow(2.0, bucket / 8.0) AS speedup_lo,
       pow(2.0, (bucket + 1) / 8.0) AS speedup_hi, n
FROM run_step_speedups;

CREATE VIEW v_task_verdicts AS
SELECT nullif(task, '') AS task, verdict, n FROM task_verdicts;

CREATE VIEW v_task_speedup_hist AS
SELECT nullif(task, '') AS task, bucket, pow(2.0, bucket / 8.0) AS speedup_lo, pow(2.0, (bucket + 1) / 8.0) AS speedup_hi, n
FROM task_speedups;

CREATE VIEW v_task_leaderboard AS
SELECT task, id, speedup, run_id, step, sample, turn, token_id, finished_at
FROM submissions
WHERE verdict = 'correct';

CREATE VIEW v_submission_turns AS
SELECT id, parent, turn, run_id, step, sample, task, state, verdict, speedup, token_id, created_at
FROM submissions;

-- Every bucket of every series observed so far (n is per bucket, not cumulative).
CREATE VIEW v_metric_histograms AS
SELECT b.metric, s.label, CASE WHEN b.le < 9e999 THEN b.le END AS le,   -- NULL: +Inf
       coalesce(h.n, 0) AS n, s.count, s.sum
FROM metric_sums s
JOIN metric_buckets b ON b.metric = s.metric
LEFT JOIN metric_hist h ON h.metric = b.metric AND h.label = s.label AND h.le = b.le;
