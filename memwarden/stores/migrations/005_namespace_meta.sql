-- What a namespace's projections are built from: its own ledger, or (a replay) another namespace's.
CREATE TABLE IF NOT EXISTS namespace_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
