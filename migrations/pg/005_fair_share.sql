-- 005_fair_share (PostgreSQL): when each token was last served per stage, as
-- ../005_fair_share.sql; the claim orders waiting jobs by it.
CREATE TABLE token_service (
        token_id bigint PRIMARY KEY,
        compile_at double precision NOT NULL DEFAULT 0,
        run_at double precision NOT NULL DEFAULT 0
);
CREATE INDEX submissions_fair ON submissions(state, priority, token_id, id);
