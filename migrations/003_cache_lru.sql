-- 003_cache_lru: bound the compile cache. Its size in bytes is kept in
-- counters('cache_bytes') by triggers; store_cache_prune() drops the least
-- recently used entries (index below) until it fits.

CREATE INDEX compile_cache_lru ON compile_cache(last_used_at);

INSERT INTO counters(name, value)
SELECT 'cache_bytes', coalesce(sum(length(CAST(compile AS BLOB)) + coalesce(length(cubin), 0)), 0)
FROM compile_cache;

CREATE TRIGGER compile_cache_bytes_insert AFTER INSERT ON compile_cache
BEGIN
        UPDATE counters SET value = value + length(CAST(NEW.compile AS BLOB)) + coalesce(length(NEW.cubin), 0)
        WHERE name = 'cache_bytes';
END;

CREATE TRIGGER compile_cache_bytes_update AFTER UPDATE OF compile, cubin ON compile_cache
BEGIN
        UPDATE counters SET value = value
                - length(CAST(OLD.compile AS BLOB)) - coalesce(length(OLD.cubin), 0)
                + length(CAST(NEW.compile AS BLOB)) + coalesce(length(NEW.cubin), 0)
        WHERE name = 'cache_bytes';
END;

CREATE TRIGGER compile_cache_bytes_delete AFTER DELETE ON compile_cache
BEGIN
        UPDATE counters SET value = value - length(CAST(OLD.compile AS BLOB)) - coalesce(length(OLD.cubin), 0)
        WHERE name = 'cache_bytes';
END;
