-- 007_dashboard_reward: what an RL researcher reads on the dashboard
-- (docs/dashboard.md): the trainer's reward, the verdict mix of every step,
-- compile-only runs told apart, and the reference times kevald measured per
-- task, shape and GPU.
--
-- The reward is the Python client's default (clients/python/kevald/reward.py,
-- RewardConfig(), yardstick "strongest"): a correct kernel earns 0.3 +
-- min(S, 10), S the smallest of its speedup over the reference and, where
-- the result has them, reward_fields.speedup_vs.torch_eager and
-- .torch_compile (common/baselines.h); a correct
-- kernel whose timing is suspicious (faster than half the roofline bound:
-- reward_fields.suspicious) earns 0, as does every other verdict; an
-- internal_error or a cancelled submission has none (NULL: dropped, never
-- trained on). tests/integration/test_dashboard.py checks the client's
-- reward() against this column on real results.

ALTER TABLE job_metrics ADD COLUMN reward REAL;                   -- NULL: no reward (internal_error, cancelled)
ALTER TABLE run_summary ADD COLUMN compile_mode INTEGER NOT NULL DEFAULT 0;    -- evaluated in mode "compile"
ALTER TABLE run_step_tasks ADD COLUMN compile_mode INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_step_tasks ADD COLUMN reward_sum REAL NOT NULL DEFAULT 0;

-- Per run, step and verdict (cancelled left out, internal_error kept): the verdict mix of a step.
CREATE TABLE run_step_verdicts (
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,                       -- -1: no step tag
        verdict TEXT NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, step, verdict)
) WITHOUT ROWID;

-- The reference's median per task, GPU model and shape set, from every result that timed it
-- (timing.shapes[].reference.median_ms): how many, their sum (for the mean), the fastest, the latest.
CREATE TABLE task_reference_times (
        task TEXT NOT NULL,
        gpu_name TEXT NOT NULL,                      -- result.gpu.name ('' when absent)
        shape TEXT NOT NULL,
        n INTEGER NOT NULL DEFAULT 0,
        median_ms_sum REAL NOT NULL DEFAULT 0,
        median_ms_min REAL,
        median_ms_last REAL,
        last_at REAL,
        PRIMARY KEY (task, gpu_name, shape)
) WITHOUT ROWID;

-- The reward of a stored result, as the client's reward() computes it (see above).
DROP TRIGGER submission_results_job_metrics;
CREATE TRIGGER submission_results_job_metrics AFTER INSERT ON submission_results
BEGIN
        INSERT OR IGNORE INTO job_metrics(id, finished_at, mode, verdict, task, run_id, step, compiled, speedup,
                                          latency_s, compile_ms, cache_hit, gpu, gpu_busy_ms, gpu_wall_ms, reward)
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
               json_extract(NEW.result, '$.wall_ms'),
               CASE WHEN coalesce(s.verdict, json_extract(NEW.result, '$.verdict'), 'unknown')
                         IN ('internal_error', 'cancelled') THEN NULL
                    WHEN coalesce(s.verdict, json_extract(NEW.result, '$.verdict'), 'unknown') != 'correct' THEN 0.0
                    WHEN coalesce(json_extract(NEW.result, '$.reward_fields.suspicious'), 0) THEN 0.0
                    ELSE 0.3 + min(coalesce(s.speedup, 0.0),
                                   coalesce(json_extract(NEW.result, '$.reward_fields.speedup_vs.torch_eager'), 10.0),
                                   coalesce(json_extract(NEW.result, '$.reward_fields.speedup_vs.torch_compile'), 10.0),
                                   10.0) END
        FROM submissions s
        WHERE s.id = NEW.id AND s.state = 'done' AND json_valid(NEW.result);

        INSERT INTO task_reference_times(task, gpu_name, shape, n, median_ms_sum, median_ms_min, median_ms_last,
                                         last_at)
        SELECT s.task, coalesce(json_extract(NEW.result, '$.gpu.name'), ''),
               coalesce(json_extract(sh.value, '$.shape'), ''), 1, sh.ms, sh.ms, sh.ms,
               coalesce(s.finished_at, s.created_at)
        FROM submissions s,
             (SELECT value, json_extract(value, '$.reference.median_ms') AS ms
              FROM json_each(CASE WHEN json_valid(NEW.result) THEN NEW.result ELSE '{}' END, '$.timing.shapes')
              WHERE type = 'object') sh
        WHERE s.id = NEW.id AND s.state = 'done' AND s.task IS NOT NULL
              AND coalesce(json_extract(NEW.result, '$.task_inline'), 0) = 0
              AND typeof(sh.ms) IN ('real', 'integer') AND sh.ms > 0
        ON CONFLICT(task, gpu_name, shape) DO UPDATE SET n = n + 1, median_ms_sum = median_ms_sum + excluded.median_ms_sum,
                median_ms_min = min(median_ms_min, excluded.median_ms_min),
                median_ms_last = CASE WHEN excluded.last_at >= last_at THEN excluded.median_ms_last
                                      ELSE median_ms_last END,
                last_at = max(last_at, excluded.last_at);
END;

-- The rollups of 006 plus the reward sum, the compile-mode count and the verdict mix per step.
DROP TRIGGER job_metrics_rollup;
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
                                first_finished_at, last_finished_at, compile_mode)
        SELECT NEW.run_id, NEW.verdict != 'internal_error', NEW.verdict != 'internal_error' AND NEW.compiled,
               NEW.verdict = 'correct', NEW.verdict = 'internal_error', nullif(NEW.step, -1),
               nullif(NEW.step, -1), NEW.finished_at, NEW.finished_at,
               NEW.verdict != 'internal_error' AND NEW.mode = 'compile'
        WHERE NEW.run_id IS NOT NULL AND NEW.verdict != 'cancelled'
        ON CONFLICT(run_id) DO UPDATE SET n = n + excluded.n, compiled = compiled + excluded.compiled,
                correct = correct + excluded.correct, internal_errors = internal_errors + excluded.internal_errors,
                min_step = coalesce(min(min_step, excluded.min_step), min_step, excluded.min_step),
                max_step = coalesce(max(max_step, excluded.max_step), max_step, excluded.max_step),
                first_finished_at = min(first_finished_at, excluded.first_finished_at),
                last_finished_at = max(last_finished_at, excluded.last_finished_at),
                compile_mode = compile_mode + excluded.compile_mode;

        INSERT INTO run_step_tasks(run_id, step, task, n, compiled, correct, speedup_sum, log_speedup_sum,
                                   best_speedup, best_id, compile_mode, reward_sum)
        SELECT NEW.run_id, NEW.step, NEW.task, 1, NEW.compiled, NEW.verdict = 'correct',
               coalesce(NEW.speedup, 0), coalesce(ln(NEW.speedup), 0), NEW.speedup,
               CASE WHEN NEW.speedup IS NOT NULL THEN NEW.id END, NEW.mode = 'compile', coalesce(NEW.reward, 0)
        WHERE NEW.run_id IS NOT NULL AND NEW.verdict NOT IN ('cancelled', 'internal_error')
        ON CONFLICT(run_id, step, task) DO UPDATE SET n = n + 1, compiled = compiled + excluded.compiled,
                correct = correct + excluded.correct, speedup_sum = speedup_sum + excluded.speedup_sum,
                log_speedup_sum = log_speedup_sum + excluded.log_speedup_sum,
                best_id = CASE WHEN excluded.best_speedup > coalesce(best_speedup, 0) THEN excluded.best_id
                               ELSE best_id END,
                best_speedup = max(coalesce(best_speedup, 0), coalesce(excluded.best_speedup, 0)),
                compile_mode = compile_mode + excluded.compile_mode, reward_sum = reward_sum + excluded.reward_sum;

        INSERT INTO run_step_verdicts(run_id, step, verdict, n)
        SELECT NEW.run_id, NEW.step, NEW.verdict, 1
        WHERE NEW.run_id IS NOT NULL AND NEW.verdict != 'cancelled'
        ON CONFLICT(run_id, step, verdict) DO UPDATE SET n = n + 1;

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

-- ---- the history so far ----------------------------------------------------

UPDATE job_metrics SET reward =
        (SELECT CASE WHEN job_metrics.verdict IN ('internal_error', 'cancelled') THEN NULL
                     WHEN job_metrics.verdict != 'correct' THEN 0.0
                     WHEN json_valid(r.result) AND coalesce(json_extract(r.result, '$.reward_fields.suspicious'), 0)
                          THEN 0.0
                     ELSE 0.3 + min(coalesce(s.speedup, 0.0),
                                    coalesce(json_extract(r.result, '$.reward_fields.speedup_vs.torch_eager'), 10.0),
                                    coalesce(json_extract(r.result, '$.reward_fields.speedup_vs.torch_compile'), 10.0),
                                    10.0) END
         FROM submissions s LEFT JOIN submission_results r ON r.id = s.id WHERE s.id = job_metrics.id);

-- One pass over the history per rollup (GROUP BY), not a scan per rollup row.
UPDATE run_summary SET compile_mode = a.cm
FROM (SELECT run_id, sum(mode = 'compile') AS cm FROM job_metrics
      WHERE run_id IS NOT NULL AND verdict NOT IN ('cancelled', 'internal_error') GROUP BY run_id) a
WHERE run_summary.run_id = a.run_id;

UPDATE run_step_tasks SET compile_mode = a.cm, reward_sum = a.rs
FROM (SELECT run_id, step, task, sum(mode = 'compile') AS cm, coalesce(sum(reward), 0) AS rs FROM job_metrics
      WHERE run_id IS NOT NULL AND verdict NOT IN ('cancelled', 'internal_error') GROUP BY run_id, step, task) a
WHERE run_step_tasks.run_id = a.run_id AND run_step_tasks.step = a.step AND run_step_tasks.task = a.task;

INSERT INTO run_step_verdicts(run_id, step, verdict, n)
SELECT run_id, step, verdict, count(*) FROM job_metrics
WHERE run_id IS NOT NULL AND verdict != 'cancelled'
GROUP BY run_id, step, verdict;

INSERT INTO task_reference_times(task, gpu_name, shape, n, median_ms_sum, median_ms_min, median_ms_last, last_at)
SELECT s.task, coalesce(json_extract(r.result, '$.gpu.name'), ''), coalesce(json_extract(sh.value, '$.shape'), ''),
       1, json_extract(sh.value, '$.reference.median_ms'), json_extract(sh.value, '$.reference.median_ms'),
       json_extract(sh.value, '$.reference.median_ms'), coalesce(s.finished_at, s.created_at)
FROM submissions s JOIN submission_results r ON r.id = s.id,
     json_each(CASE WHEN json_valid(r.result) THEN r.result ELSE '{}' END, '$.timing.shapes') sh
WHERE s.state = 'done' AND s.task IS NOT NULL AND sh.type = 'object'
      AND typeof(json_extract(sh.value, '$.reference.median_ms')) IN ('real', 'integer')
      AND json_extract(sh.value, '$.reference.median_ms') > 0
ORDER BY s.id
ON CONFLICT(task, gpu_name, shape) DO UPDATE SET n = n + 1, median_ms_sum = median_ms_sum + excluded.median_ms_sum,
        median_ms_min = min(median_ms_min, excluded.median_ms_min),
        median_ms_last = CASE WHEN excluded.last_at >= last_at THEN excluded.median_ms_last ELSE median_ms_last END,
        last_at = max(last_at, excluded.last_at);

-- ---- views ------------------------------------------------------------------

DROP VIEW v_job_metrics;
CREATE VIEW v_job_metrics AS
SELECT id, finished_at, strftime('%Y-%m-%dT%H:%M:%fZ', finished_at, 'unixepoch') AS finished, mode, verdict,
       nullif(task, '') AS task, run_id, nullif(step, -1) AS step, compiled, speedup, latency_s, compile_ms,
       cache_hit, gpu, gpu_busy_ms, gpu_wall_ms, reward
FROM job_metrics;

-- checked: evaluated in mode "full" (correctness was checked); the correct rate is over those, the compile
-- rate over every evaluated submission.
DROP VIEW v_run_summary;
CREATE VIEW v_run_summary AS
SELECT run_id, n AS evaluated, compiled, correct, internal_errors,
       CASE WHEN n - compile_mode > 0 THEN CAST(correct AS REAL) / (n - compile_mode) END AS correct_rate,
       min_step, max_step, first_finished_at, last_finished_at, compile_mode, n - compile_mode AS checked,
       CASE WHEN n > 0 THEN CAST(compiled AS REAL) / n END AS compile_rate
FROM run_summary;

DROP VIEW v_run_steps;
CREATE VIEW v_run_steps AS
SELECT run_id, nullif(step, -1) AS step, sum(n) AS evaluated, sum(compiled) AS compiled, sum(correct) AS correct,
       CASE WHEN sum(n) - sum(compile_mode) > 0 THEN CAST(sum(correct) AS REAL) / (sum(n) - sum(compile_mode))
       END AS correct_rate,
       sum(reward_sum) / sum(n) AS mean_reward,
       CASE WHEN sum(correct) > 0 THEN exp(sum(log_speedup_sum) / sum(correct)) END AS geomean_speedup,
       max(best_speedup) AS best_speedup, count(*) AS tasks, sum(compile_mode) AS compile_mode,
       sum(n) - sum(compile_mode) AS checked, CAST(sum(compiled) AS REAL) / sum(n) AS compile_rate
FROM run_step_tasks
GROUP BY run_id, step;

DROP VIEW v_run_step_tasks;
CREATE VIEW v_run_step_tasks AS
SELECT run_id, nullif(step, -1) AS step, nullif(task, '') AS task, n AS evaluated, compiled, correct,
       CASE WHEN n - compile_mode > 0 THEN CAST(correct AS REAL) / (n - compile_mode) END AS correct_rate,
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
