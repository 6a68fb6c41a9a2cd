-- 006_dashboard (PostgreSQL): the rollups and views of ../006_dashboard.sql,
-- kept by triggers when a result is stored. JSON numbers are read with
-- kevald_json_num() (true/false count as 1/0, as SQLite's json_extract()).

CREATE FUNCTION kevald_json_num(j jsonb) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE jsonb_typeof(j) WHEN 'number' THEN (j #>> '{}')::double precision
                                    WHEN 'boolean' THEN CASE WHEN j = 'true'::jsonb THEN 1 ELSE 0 END END
$$;
-- An integer tag, or NULL (not a number, or out of range).
CREATE FUNCTION kevald_json_int(doc text, key text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN jsonb_typeof(j) = 'number' AND abs((j #>> '{}')::numeric) < 9e18
                    THEN (j #>> '{}')::numeric::bigint END
        FROM (SELECT doc::jsonb -> key AS j) x
$$;

ALTER TABLE submissions ADD COLUMN step bigint GENERATED ALWAYS AS (kevald_json_int(tags, 'step')) STORED;
ALTER TABLE submissions ADD COLUMN sample bigint GENERATED ALWAYS AS (kevald_json_int(tags, 'sample')) STORED;
ALTER TABLE submissions ADD COLUMN turn bigint GENERATED ALWAYS AS (kevald_json_int(tags, 'turn')) STORED;
ALTER TABLE submissions ADD COLUMN parent bigint GENERATED ALWAYS AS (kevald_json_int(tags, 'parent')) STORED;

CREATE INDEX submissions_parent ON submissions(parent) WHERE parent IS NOT NULL;
CREATE INDEX submissions_leaderboard ON submissions(task, speedup DESC) WHERE verdict = 'correct';

CREATE TABLE job_metrics (
        id bigint PRIMARY KEY,
        finished_at double precision NOT NULL,
        mode text NOT NULL,
        verdict text NOT NULL,
        task text NOT NULL,
        run_id text,
        step bigint NOT NULL,
        compiled bigint NOT NULL,
        speedup double precision,
        latency_s double precision,
        compile_ms double precision,
        cache_hit bigint,
        gpu bigint,
        gpu_busy_ms double precision,
        gpu_wall_ms double precision
);

CREATE TABLE activity_minutely (
        minute_start bigint NOT NULL,
        verdict text NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        latency_sum_s double precision NOT NULL DEFAULT 0,
        compiles bigint NOT NULL DEFAULT 0,
        compile_ms_sum double precision NOT NULL DEFAULT 0,
        cache_hits bigint NOT NULL DEFAULT 0,
        cache_misses bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (minute_start, verdict)
);

CREATE TABLE gpu_minutely (
        minute_start bigint NOT NULL,
        gpu bigint NOT NULL,
        jobs bigint NOT NULL DEFAULT 0,
        busy_ms double precision NOT NULL DEFAULT 0,
        PRIMARY KEY (minute_start, gpu)
);

CREATE TABLE run_summary (
        run_id text PRIMARY KEY,
        n bigint NOT NULL DEFAULT 0,
        compiled bigint NOT NULL DEFAULT 0,
        correct bigint NOT NULL DEFAULT 0,
        internal_errors bigint NOT NULL DEFAULT 0,
        min_step bigint,
        max_step bigint,
        first_finished_at double precision,
        last_finished_at double precision
);

CREATE TABLE run_step_tasks (
        run_id text NOT NULL,
        step bigint NOT NULL,
        task text NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        compiled bigint NOT NULL DEFAULT 0,
        correct bigint NOT NULL DEFAULT 0,
        speedup_sum double precision NOT NULL DEFAULT 0,
        log_speedup_sum double precision NOT NULL DEFAULT 0,
        best_speedup double precision,
        best_id bigint,
        PRIMARY KEY (run_id, step, task)
);

CREATE TABLE run_step_speedups (
        run_id text NOT NULL,
        step bigint NOT NULL,
        bucket integer NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, step, bucket)
);

CREATE TABLE task_verdicts (
        task text NOT NULL,
        verdict text NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (task, verdict)
);

CREATE TABLE metric_buckets (
        metric text NOT NULL,
        le double precision NOT NULL,                -- 'Infinity' is +Inf
        PRIMARY KEY (metric, le)
);
CREATE TABLE metric_hist (
        metric text NOT NULL,
        label text NOT NULL,
        le double precision NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (metric, label, le)
);
CREATE TABLE metric_sums (
        metric text NOT NULL,
        label text NOT NULL,
        count bigint NOT NULL DEFAULT 0,
        sum double precision NOT NULL DEFAULT 0,
        PRIMARY KEY (metric, label)
);

INSERT INTO metric_buckets(metric, le)
SELECT 'submission_latency_seconds', unnest('{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, Infinity}'::double precision[])
UNION ALL
SELECT 'compile_duration_seconds', unnest('{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, Infinity}'::double precision[])
UNION ALL
SELECT 'job_gpu_busy_seconds', unnest('{0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, Infinity}'::double precision[]);

CREATE FUNCTION submission_results_job_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
        BEGIN
                r := NEW.result::jsonb;
        EXCEPTION WHEN others THEN
                RETURN NULL;                         -- not JSON (the store never writes one): skipped
        END;
        INSERT INTO job_metrics(id, finished_at, mode, verdict, task, run_id, step, compiled, speedup,
                                latency_s, compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms)
        SELECT s.id, coalesce(s.finished_at, s.created_at), s.mode,
               coalesce(s.verdict, r ->> 'verdict', 'unknown'),
               coalesce(s.task, ''), s.run_id, coalesce(s.step, -1),
               coalesce(kevald_json_num(r -> 'reward_fields' -> 'compiled'), 0)::bigint,
               CASE WHEN s.verdict = 'correct' AND s.speedup > 0 THEN s.speedup END,
               s.finished_at - s.created_at,
               CASE WHEN kevald_json_num(r -> 'compile' -> 'cache_hit') = 0
                    THEN kevald_json_num(r -> 'compile' -> 'compile_ms') END,
               kevald_json_num(r -> 'compile' -> 'cache_hit')::bigint,
               kevald_json_num(r -> 'gpu' -> 'index')::bigint,
               kevald_json_num(r -> 'gpu_busy_ms'),
               kevald_json_num(r -> 'wall_ms')
        FROM submissions s WHERE s.id = NEW.id AND s.state = 'done'
        ON CONFLICT (id) DO NOTHING;
        RETURN NULL;
END $$;
CREATE TRIGGER submission_results_job_metrics AFTER INSERT ON submission_results
FOR EACH ROW EXECUTE FUNCTION submission_results_job_metrics();

CREATE FUNCTION job_metrics_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE minute bigint := (floor(NEW.finished_at / 60) * 60)::bigint;
BEGIN
        INSERT INTO activity_minutely AS a (minute_start, verdict, n, latency_sum_s, compiles, compile_ms_sum,
                                            cache_hits, cache_misses)
        VALUES (minute, NEW.verdict, 1, coalesce(NEW.latency_s, 0), (NEW.compile_ms IS NOT NULL)::int,
                coalesce(NEW.compile_ms, 0), coalesce((NEW.cache_hit = 1)::int, 0),
                coalesce((NEW.cache_hit = 0)::int, 0))
        ON CONFLICT (minute_start, verdict) DO UPDATE SET n = a.n + 1,
                latency_sum_s = a.latency_sum_s + excluded.latency_sum_s,
                compiles = a.compiles + excluded.compiles, compile_ms_sum = a.compile_ms_sum + excluded.compile_ms_sum,
                cache_hits = a.cache_hits + excluded.cache_hits, cache_misses = a.cache_misses + excluded.cache_misses;

        IF NEW.gpu IS NOT NULL THEN
                INSERT INTO gpu_minutely AS g (minute_start, gpu, jobs, busy_ms)
                VALUES (minute, NEW.gpu, 1, coalesce(NEW.gpu_busy_ms, 0))
                ON CONFLICT (minute_start, gpu) DO UPDATE SET jobs = g.jobs + 1, busy_ms = g.busy_ms + excluded.busy_ms;
        END IF;

        INSERT INTO task_verdicts AS t (task, verdict, n) VALUES (NEW.task, NEW.verdict, 1)
        ON CONFLICT (task, verdict) DO UPDATE SET n = t.n + 1;

        IF NEW.run_id IS NOT NULL AND NEW.verdict <> 'cancelled' THEN
                INSERT INTO run_summary AS rs (run_id, n, compiled, correct, internal_errors, min_step, max_step,
                                               first_finished_at, last_finished_at)
                VALUES (NEW.run_id, (NEW.verdict <> 'internal_error')::int,
                        (NEW.verdict <> 'internal_error' AND NEW.compiled <> 0)::int,
                        (NEW.verdict = 'correct')::int, (NEW.verdict = 'internal_error')::int,
                        nullif(NEW.step, -1), nullif(NEW.step, -1), NEW.finished_at, NEW.finished_at)
                ON CONFLICT (run_id) DO UPDATE SET n = rs.n + excluded.n, compiled = rs.compiled + excluded.compiled,
                        correct = rs.correct + excluded.correct,
                        internal_errors = rs.internal_errors + excluded.internal_errors,
                        min_step = least(rs.min_step, excluded.min_step),
                        max_step = greatest(rs.max_step, excluded.max_step),
                        first_finished_at = least(rs.first_finished_at, excluded.first_finished_at),
                        last_finished_at = greatest(rs.last_finished_at, excluded.last_finished_at);
        END IF;

        IF NEW.run_id IS NOT NULL AND NEW.verdict NOT IN ('cancelled', 'internal_error') THEN
                INSERT INTO run_step_tasks AS rt (run_id, step, task, n, compiled, correct, speedup_sum,
                                                  log_speedup_sum, best_speedup, best_id)
                VALUES (NEW.run_id, NEW.step, NEW.task, 1, NEW.compiled, (NEW.verdict = 'correct')::int,
                        coalesce(NEW.speedup, 0), coalesce(ln(NEW.speedup), 0), NEW.speedup,
                        CASE WHEN NEW.speedup IS NOT NULL THEN NEW.id END)
                ON CONFLICT (run_id, step, task) DO UPDATE SET n = rt.n + 1, compiled = rt.compiled + excluded.compiled,
                        correct = rt.correct + excluded.correct, speedup_sum = rt.speedup_sum + excluded.speedup_sum,
                        log_speedup_sum = rt.log_speedup_sum + excluded.log_speedup_sum,
                        best_id = CASE WHEN excluded.best_speedup > coalesce(rt.best_speedup, 0) THEN excluded.best_id
                                       ELSE rt.best_id END,
                        best_speedup = greatest(coalesce(rt.best_speedup, 0), coalesce(excluded.best_speedup, 0));
        END IF;

        IF NEW.run_id IS NOT NULL AND NEW.speedup IS NOT NULL THEN
                INSERT INTO run_step_speedups AS rp (run_id, step, bucket, n)
                VALUES (NEW.run_id, NEW.step, kevald_speedup_bucket(NEW.speedup), 1)
                ON CONFLICT (run_id, step, bucket) DO UPDATE SET n = rp.n + 1;
        END IF;

        INSERT INTO metric_hist AS h (metric, label, le, n)
        SELECT 'submission_latency_seconds', NEW.mode,
               (SELECT min(le) FROM metric_buckets WHERE metric = 'submission_latency_seconds'
                AND le >= NEW.latency_s), 1
        WHERE NEW.latency_s IS NOT NULL AND NEW.verdict <> 'cancelled'
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
        ON CONFLICT (metric, label, le) DO UPDATE SET n = h.n + 1;

        INSERT INTO metric_sums AS m (metric, label, count, sum)
        SELECT 'submission_latency_seconds', NEW.mode, 1, NEW.latency_s
        WHERE NEW.latency_s IS NOT NULL AND NEW.verdict <> 'cancelled'
        UNION ALL
        SELECT 'compile_duration_seconds', '', 1, NEW.compile_ms / 1000.0 WHERE NEW.compile_ms IS NOT NULL
        UNION ALL
        SELECT 'job_gpu_busy_seconds', '', 1, NEW.gpu_busy_ms / 1000.0 WHERE NEW.gpu_busy_ms IS NOT NULL
        ON CONFLICT (metric, label) DO UPDATE SET count = m.count + 1, sum = m.sum + excluded.sum;
        RETURN NULL;
END $$;
CREATE TRIGGER job_metrics_rollup AFTER INSERT ON job_metrics
FOR EACH ROW EXECUTE FUNCTION job_metrics_rollup();

-- ---- views ----------------------------------------------------------------

CREATE VIEW v_activity_minutely AS
SELECT minute_start, to_char(to_timestamp(minute_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:00"Z"') AS minute,
       verdict, n, latency_sum_s, CASE WHEN n > 0 THEN latency_sum_s / n END AS latency_mean_s,
       compiles, compile_ms_sum, cache_hits, cache_misses
FROM activity_minutely;

CREATE VIEW v_gpu_busy_minutely AS
SELECT minute_start, to_char(to_timestamp(minute_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:00"Z"') AS minute,
       gpu, jobs, busy_ms, busy_ms / 60000.0 AS busy_fraction
FROM gpu_minutely;

CREATE VIEW v_job_metrics AS
SELECT id, finished_at, to_char(to_timestamp(finished_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS finished,
       mode, verdict, nullif(task, '') AS task, run_id, nullif(step, -1) AS step, compiled, speedup, latency_s,
       compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms
FROM job_metrics;

CREATE VIEW v_run_summary AS
SELECT run_id, n AS evaluated, compiled, correct, internal_errors,
       CASE WHEN n > 0 THEN correct::double precision / n END AS correct_rate,
       min_step, max_step, first_finished_at, last_finished_at
FROM run_summary;

CREATE VIEW v_run_steps AS
SELECT run_id, nullif(step, -1) AS step, sum(n) AS evaluated, sum(compiled) AS compiled, sum(correct) AS correct,
       sum(correct)::double precision / sum(n) AS correct_rate,
       sum(speedup_sum) / sum(n) AS mean_reward,
       CASE WHEN sum(correct) > 0 THEN exp(sum(log_speedup_sum) / sum(correct)) END AS geomean_speedup,
       max(best_speedup) AS best_speedup, count(*) AS tasks
FROM run_step_tasks
GROUP BY run_id, step;

CREATE VIEW v_run_step_tasks AS
SELECT run_id, nullif(step, -1) AS step, nullif(task, '') AS task, n AS evaluated, compiled, correct,
       correct::double precision / n AS correct_rate, speedup_sum / n AS mean_reward,
       CASE WHEN correct > 0 THEN exp(log_speedup_sum / correct) END AS geomean_speedup,
       best_speedup, best_id
FROM run_step_tasks;

CREATE VIEW v_run_step_speedups AS
SELECT run_id, nullif(step, -1) AS step, bucket, power(2.0, bucket / 8.0)::double precision AS speedup_lo,
       power(2.0, (bucket + 1) / 8.0)::double precision AS speedup_hi, n
FROM run_step_speedups;

CREATE VIEW v_task_verdicts AS
SELECT nullif(task, '') AS task, verdict, n FROM task_verdicts;

CREATE VIEW v_task_speedup_hist AS
SELECT nullif(task, '') AS task, bucket, power(2.0, bucket / 8.0)::double precision AS speedup_lo,
       power(2.0, (bucket + 1) / 8.0)::double precision AS speedup_hi, n
FROM task_speedups;

CREATE VIEW v_task_leaderboard AS
SELECT task, id, speedup, run_id, step, sample, turn, token_id, finished_at
FROM submissions
WHERE verdict = 'correct';

CREATE VIEW v_submission_turns AS
SELECT id, parent, turn, run_id, step, sample, task, state, verdict, speedup, token_id, created_at
FROM submissions;

CREATE VIEW v_metric_histograms AS
SELECT b.metric, s.label, CASE WHEN b.le < 'Infinity' THEN b.le END AS le,
       coalesce(h.n, 0) AS n, s.count, s.sum
FROM metric_sums s
JOIN metric_buckets b ON b.metric = s.metric
LEFT JOIN metric_hist h ON h.metric = b.metric AND h.label = s.label AND h.le = b.le;
