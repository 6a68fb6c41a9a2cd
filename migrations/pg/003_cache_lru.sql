-- 003_cache_lru (PostgreSQL): the compile cache's size in counters('cache_bytes'),
-- kept by a trigger; store_cache_prune() drops least recently used entries.
-- The cache is shared by every host of the fleet.

CREATE INDEX compile_cache_lru ON compile_cache(last_used_at);

INSERT INTO counters(name, value) VALUES ('cache_bytes', 0);

CREATE FUNCTION compile_cache_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta bigint := 0;
BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
                delta := delta - octet_length(OLD.compile) - coalesce(octet_length(OLD.cubin), 0);
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
                delta := delta + octet_length(NEW.compile) + coalesce(octet_length(NEW.cubin), 0);
        END IF;
        IF delta <> 0 THEN
                UPDATE counters SET value = value + delta WHERE name = 'cache_bytes';
        END IF;
        RETURN NULL;
END $$;
CREATE TRIGGER compile_cache_bytes AFTER INSERT OR DELETE OR UPDATE OF compile, cubin ON compile_cache
FOR EACH ROW EXECUTE FUNCTION compile_cache_bytes();
