-- Signed read requests already served (read authentication's replay window, shared by every read-API
-- process of the namespace and kept across their restarts): the SHA-256 of a request's signed bytes and
-- signature, and when its window ends (ms since the epoch). Ids of nothing, no content. UNLOGGED: the
-- rows are short-lived and written on every signed read, so they stay out of the WAL (no flush per
-- read); a database crash empties the table, and then a request captured less than the skew window
-- (60 s) before the crash could be replayed once more.
CREATE UNLOGGED TABLE IF NOT EXISTS served_requests (
    digest         bytea  PRIMARY KEY,
    expires_at_ms  bigint NOT NULL
);
