-- Fair share between tokens: within the highest waiting priority, the next
-- job of a stage comes from the token that stage served longest ago (round
-- robin), oldest job first. token_service remembers when each token was
-- last served per stage; the index makes "oldest waiting job per token" an
-- index walk.
CREATE TABLE token_service (
    token_id   INTEGER PRIMARY KEY,
    compile_at REAL NOT NULL DEFAULT 0,
    run_at     REAL NOT NULL DEFAULT 0
);
CREATE INDEX submissions_fair ON submissions(state, priority, token_id, id);
