-- 007_dashboard_reward (PostgreSQL): the reward, the verdict mix per step,
-- compile-only runs and the reference times of ../007_dashboard_reward.sql.
-- The reward is the Python client's default (clients/python/kevald/reward.py):
-- correct 0.3 + min(speedup, 10), suspicious correct 0, other verdicts 0,
-- internal_error and cancelled none (NULL).

ALTER TABLE job_metrics ADD COLUMN reward double precision;
ALTER TABLE run_summary ADD COLUMN compile_mode bigint NOT NULL DEFAULT 0;
ALTER TABLE run_step_tasks ADD COLUMN compile_mode bigint NOT NULL DEFAULT 0;
ALTER TABLE run_step_tasks ADD COLUMN reward_sum double precision NOT NULL DEFAULT 0;

CREATE TABLE run_step_verdicts (
        run_id text NOT NULL,
        step bigint NOT NULL,
        verdict text NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, step, verdict)
);

CREATE TABLE task_reference_times (
        task text NOT NULL,
        gpu_name text NOT NULL,
        shape text NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        median_ms_sum double precision NOT NULL DEFAULT 0,
        median_ms_min double precision,
        median_ms_last double precision,
        last_at double precision,
        PRIMARY KEY (task, gpu_name, shape)
);

-- The client's default reward of a stored result.
CREATE FUNCTION kevald_reward(verdict text, speedup double precision, r jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN verdict IN ('internal_error', 'cancelled') THEN NULL
                    WHEN verdict <> 'correct' THEN 0.0
                    WHEN coalesce(kevald_json_num(r -> 'reward_fields' -> 'suspicious'), 0) <> 0 THEN 0.0
                    ELSE 0.3 + least(coalesce(speedup, 0.0),
                                     kevald_json_num(r -> 'reward_fields' -> 'speedup_vs' -> 'torch_eager'),
                                     kevald_json_num(r -> 'reward_fields' -> 'speedup_vs' -> 'torch_compile'),
                                     10.0) END
$$;

-- Add the reference medians of result @r (timing.shapes[].reference.median_ms) to task_reference_times.
CREATE FUNCTION kevald_reference_times(p_task text, r jsonb, p_at double precision) RETURNS void
LANGUAGE sql AS $$
        INSERT INTO task_reference_times AS t (task, gpu_name, shape, n, median_ms_sum, median_ms_min,
                                               median_ms_last, last_at)
        SELECT p_task, coalesce(r -> 'gpu' ->> 'name', ''), coalesce(sh ->> 'shape', ''), 1,
               kevald_json_num(sh -> 'reference' -> 'median_ms'), kevald_json_num(sh -> 'reference' -> 'median_ms'),
               kevald_json_num(sh -> 'reference' -> 'median_ms'), p_at
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r -> 'timing' -> 'shapes') = 'array'
                                       THEN r -> 'timing' -> 'shapes' ELSE '[]'::jsonb END) AS e(sh)
        WHERE p_task IS NOT NULL AND jsonb_typeof(sh) = 'object'
              AND coalesce(r -> 'task_inline', 'false'::jsonb) <> 'true'::jsonb
              AND jsonb_typeof(sh -> 'reference' -> 'median_ms') = 'number'
              AND kevald_json_num(sh -> 'reference' -> 'median_ms') > 0
        ON CONFLICT (task, gpu_name, shape) DO UPDATE SET n = t.n + 1,
                median_ms_sum = t.median_ms_sum + excluded.median_ms_sum,
                median_ms_min = least(t.median_ms_min, excluded.median_ms_min),
                median_ms_last = CASE WHEN excluded.last_at >= t.last_at THEN excluded.median_ms_last
                                      ELSE t.median_ms_last END,
                last_at = greatest(t.last_at, excluded.last_at)
$$;

-- @doc as jsonb, or NULL when it is not JSON (the store never writes such a result).
CREATE FUNCTION kevald_try_jsonb(doc text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
        RETURN doc::jsonb;
EXCEPTION WHEN others THEN
        RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION submission_results_job_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
        BEGIN
                r := NEW.result::jsonb;
        EXCEPTION WHEN others THEN
                RETURN NULL;                         -- not JSON (the store never writes one): skipped
        END;
        INSERT INTO job_metrics(id, finished_at, mode, verdict, task, run_id, step, compiled, speedup,
                                latency_s, compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms, reward)
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
               kevald_json_num(r -> 'wall_ms'),
               kevald_reward(coalesce(s.verdict, r ->> 'verdict', 'unknown'), s.speedup, r)
        FROM submissions s WHERE s.id = NEW.id AND s.state = 'done'
        ON CONFLICT (id) DO NOTHING;
        PERFORM kevald_reference_times(s.task, r, coalesce(s.finished_at, s.created_at))
        FROM submissions s WHERE s.id = NEW.id AND s.state = 'done' AND s.task IS NOT NULL;
        RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION job_metrics_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
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
                                               first_finished_at, last_finished_at, compile_mode)
                VALUES (NEW.run_id, (NEW.verdict <> 'internal_error')::int,
                        (NEW.verdict <> 'internal_error' AND NEW.compiled <> 0)::int,
                        (NEW.verdict = 'correct')::int, (NEW.verdict = 'internal_error')::int,
                        nullif(NEW.step, -1), nullif(NEW.step, -1), NEW.finished_at, NEW.finished_at,
                        (NEW.verdict <> 'internal_error' AND NEW.mode = 'compile')::int)
                ON CONFLICT (run_id) DO UPDATE SET n = rs.n + excluded.n, compiled = rs.compiled + excluded.compiled,
                        correct = rs.correct + excluded.correct,
                        internal_errors = rs.internal_errors + excluded.internal_errors,
                        min_step = least(rs.min_step, excluded.min_step),
                        max_step = greatest(rs.max_step, excluded.max_step),
                        first_finished_at = least(rs.first_finished_at, excluded.first_finished_at),
                        last_finished_at = greatest(rs.last_finished_at, excluded.last_finished_at),
                        compile_mode = rs.compile_mode + excluded.compile_mode;

                INSERT INTO run_step_verdicts AS rv (run_id, step, verdict, n)
                VALUES (NEW.run_id, NEW.step, NEW.verdict, 1)
                ON CONFLICT (run_id, step, verdict) DO UPDATE SET n = rv.n + 1;
        END IF;

        IF NEW.run_id IS NOT NULL AND NEW.verdict NOT IN ('cancelled', 'internal_error') THEN
                INSERT INTO run_step_tasks AS rt (run_id, step, task, n, compiled, correct, speedup_sum,
                                                  log_speedup_sum, best_speedup, best_id, compile_mode, reward_sum)
                VALUES (NEW.run_id, NEW.step, NEW.task, 1, NEW.compiled, (NEW.verdict = 'correct')::int,
                        coalesce(NEW.speedup, 0), coalesce(ln(NEW.speedup), 0), NEW.speedup,
                        CASE WHEN NEW.speedup IS NOT NULL THEN NEW.id END, (NEW.mode = 'compile')::int,
                        coalesce(NEW.reward, 0))
                ON CONFLICT (run_id, step, task) DO UPDATE SET n = rt.n + 1, compiled = rt.compiled + excluded.compiled,
                        correct = rt.correct + excluded.correct, speedup_sum = rt.speedup_sum + excluded.speedup_sum,
                        log_speedup_sum = rt.log_speedup_sum + excluded.log_speedup_sum,
                        best_id = CASE WHEN excluded.best_speedup > coalesce(rt.best_speedup, 0) THEN excluded.best_id
                                       ELSE rt.best_id END,
                        best_speedup = greatest(coalesce(rt.best_speedup, 0), coalesce(excluded.best_speedup, 0)),
                        compile_mode = rt.compile_mode + excluded.compile_mode,
                        reward_sum = rt.reward_sum + excluded.reward_sum;
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

-- ---- the history so far ----------------------------------------------------

UPDATE job_metrics j SET reward = kevald_reward(j.verdict, s.speedup, kevald_try_jsonb(r.result))
FROM submissions s LEFT JOIN submission_results r ON r.id = s.id WHERE s.id = j.id;

-- One pass over the history per rollup (GROUP BY), not a scan per rollup row.
UPDATE run_summary rs SET compile_mode = a.cm
FROM (SELECT run_id, count(*) FILTER (WHERE mode = 'compile') AS cm FROM job_metrics
      WHERE run_id IS NOT NULL AND verdict NOT IN ('cancelled', 'internal_error') GROUP BY run_id) a
WHERE rs.run_id = a.run_id;

UPDATE run_step_tasks rt SET compile_mode = a.cm, reward_sum = a.rs
FROM (SELECT run_id, step, task, count(*) FILTER (WHERE mode = 'compile') AS cm, coalesce(sum(reward), 0) AS rs
      FROM job_metrics WHERE run_id IS NOT NULL AND verdict NOT IN ('cancelled', 'internal_error')
      GROUP BY run_id, step, task) a
WHERE rt.run_id = a.run_id AND rt.step = a.step AND rt.task = a.task;

INSERT INTO run_step_verdicts(run_id, step, verdict, n)
SELECT run_id, step, verdict, count(*) FROM job_metrics
WHERE run_id IS NOT NULL AND verdict <> 'cancelled'
GROUP BY run_id, step, verdict;

SELECT kevald_reference_times(s.task, kevald_try_jsonb(r.result), coalesce(s.finished_at, s.created_at))
FROM submissions s JOIN submission_results r ON r.id = s.id
WHERE s.state = 'done' AND s.task IS NOT NULL AND kevald_try_jsonb(r.result) IS NOT NULL
ORDER BY s.id;

-- ---- views ------------------------------------------------------------------

DROP VIEW v_job_metrics;
CREATE VIEW v_job_metrics AS
SELECT id, finished_at, to_char(to_timestamp(finished_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS finished,
       mode, verdict, nullif(task, '') AS task, run_id, nullif(step, -1) AS step, compiled, speedup, latency_s,
       compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms, reward
FROM job_metrics;

DROP VIEW v_run_summary;
CREATE VIEW v_run_summary AS
SELECT run_id, n AS evaluated, compiled, correct, internal_errors,
       CASE WHEN n - compile_mode > 0 THEN correct::double precision / (n - compile_mode) END AS correct_rate,
       min_step, max_step, first_finished_at, last_finished_at, compile_mode, n - compile_mode AS checked,
       CASE WHEN n > 0 THEN compiled::double precision / n END AS compile_rate
FROM run_summary;

DROP VIEW v_run_steps;
CREATE VIEW v_run_steps AS
SELECT run_id, nullif(step, -1) AS step, sum(n) AS evaluated, sum(compiled) AS compiled, sum(correct) AS correct,
       CASE WHEN sum(n) - sum(compile_mode) > 0
            THEN sum(correct)::double precision / (sum(n) - sum(compile_mode)) END AS correct_rate,
       sum(reward_sum) / sum(n) AS mean_reward,
       CASE WHEN sum(correct) > 0 THEN exp(sum(log_speedup_sum) / sum(correct)) END AS geomean_speedup,
       max(best_speedup) AS best_speedup, count(*) AS tasks, sum(compile_mode) AS compile_mode,
       sum(n) - sum(compile_mode) AS checked, sum(compiled)::double precision / sum(n) AS compile_rate
FROM run_step_tasks
GROUP BY run_id, step;

DROP VIEW v_run_step_tasks;
CREATE VIEW v_run_step_tasks AS
SELECT run_id, nullif(step, -1) AS step, nullif(task, '') AS task, n AS evaluated, compiled, correct,
       CASE WHEN n - compile_mode > 0 THEN correct::double precision / (n - compile_mode) END AS correct_rate,
       reward_sum / n AS mean_reward,
       CASE WHEN correct > 0 THEN exp(log_speedup_sum / correct) END AS geomean_speedup,
       best_speedup, best_id, compile_mode, n - compile_mode AS checked
FROM run_step_tasks;

CREATE VIEW v_run_step_verdicts AS
SELECT run_id, nullif(step, -1) AS step, verdict, n FROM run_step_verdicts;

CREATE VIEW v_task_reference_times AS
SELECT task, nullif(gpu_name, '') AS gpu_name, shape, n, median_ms_sum / n AS median_ms_mean, median_ms_min,
       median_ms_last, last_at
FROM task_reference_times;
