-- 004_insert_counts: per-row insert triggers cost ~15 µs a submission (a
-- third of the insert). store_insert_request() now adds to queue_counts and
-- task_stats once per request and task instead; the triggers that count
-- submissions reaching 'done' (or deleted) stay.

DROP TRIGGER submissions_count_insert;
DROP TRIGGER submissions_task_stats_insert;
