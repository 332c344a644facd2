-- The last valid use of each memory (SSGM Eq. 3: freshness decays with the time since the last valid
-- use of the memory). One row per memory, only ever moved forward, so applying MemoryUsed events in
-- any order (a replay reads partition after partition) gives the same state as live.
CREATE TABLE IF NOT EXISTS memory_uses (
    memory_id    uuid        PRIMARY KEY,
    last_used_at timestamptz NOT NULL
);
