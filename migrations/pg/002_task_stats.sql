-- 002_task_stats (PostgreSQL): per-task and per-verdict counts and a speedup
-- histogram kept by a trigger, as ../002_task_stats.sql. Buckets use the
-- numeric log so that exact powers of two land in their own bucket.

CREATE TABLE task_stats (
        task text PRIMARY KEY,
        submissions bigint NOT NULL DEFAULT 0,
        done bigint NOT NULL DEFAULT 0,
        correct bigint NOT NULL DEFAULT 0,
        compile_errors bigint NOT NULL DEFAULT 0
);

CREATE TABLE task_speedups (
        task text NOT NULL,
        bucket integer NOT NULL,
        n bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (task, bucket)
);

CREATE TABLE verdict_counts (
        verdict text PRIMARY KEY,
        n bigint NOT NULL DEFAULT 0
);

-- floor(8 * log2(speedup)) clamped to [-80, 80].
CREATE FUNCTION kevald_speedup_bucket(s double precision) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
        SELECT greatest(-80, least(80, floor(8 * log(2.0, s::numeric))::integer))
$$;

CREATE FUNCTION submissions_task_stats_done() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
        UPDATE task_stats SET done = done + 1,
                correct = correct + (NEW.verdict IS NOT DISTINCT FROM 'correct')::int,
                compile_errors = compile_errors + (NEW.verdict IS NOT DISTINCT FROM 'compile_error')::int
        WHERE task = coalesce(NEW.task, '');
        IF NEW.verdict IS NOT NULL THEN
                INSERT INTO verdict_counts(verdict, n) VALUES (NEW.verdict, 1)
                ON CONFLICT (verdict) DO UPDATE SET n = verdict_counts.n + 1;
        END IF;
        IF NEW.verdict = 'correct' AND NEW.speedup > 0 THEN
                INSERT INTO task_speedups(task, bucket, n)
                VALUES (coalesce(NEW.task, ''), kevald_speedup_bucket(NEW.speedup), 1)
                ON CONFLICT (task, bucket) DO UPDATE SET n = task_speedups.n + 1;
        END IF;
        RETURN NULL;
END $$;
CREATE TRIGGER submissions_task_stats_done AFTER UPDATE OF state ON submissions
FOR EACH ROW WHEN (NEW.state = 'done' AND OLD.state <> 'done') EXECUTE FUNCTION submissions_task_stats_done();

CREATE VIEW v_task_summary AS
SELECT task, submissions, done, correct, compile_errors,
       CASE WHEN done > 0 THEN correct::double precision / done END AS correct_rate
FROM task_stats;
