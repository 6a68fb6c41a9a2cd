-- 004_insert_counts (PostgreSQL): nothing to do. SQLite's 004 dropped the
-- per-row insert triggers of its 001 and 002; store_insert_request() counts
-- a request's submissions into queue_counts and task_stats once per request.
-- The PostgreSQL schema never had those triggers. The file keeps the
-- numbering in step with ../004_insert_counts.sql.
SELECT 1;
