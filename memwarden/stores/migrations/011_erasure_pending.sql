-- Forgets whose erasure receipt is not on the ledger yet (issue 14, step 7): a projection of the events
-- topic (a MemoryForgotten adds its row in the projector's transaction, the ErasureReceipted of the
-- same command and memory removes it), so a worker restarted between a forget and its receipt still
-- owes it, and a replay holds the same rows. Ids and positions only.
CREATE TABLE IF NOT EXISTS erasure_pending (
    command_id        uuid        NOT NULL,
    memory_id         uuid        NOT NULL,
    subject           text        NOT NULL,
    ledger_topic      text        NOT NULL,
    ledger_partition  integer     NOT NULL,
    ledger_offset     bigint      NOT NULL,
    decided_at        timestamptz NOT NULL,
    PRIMARY KEY (command_id, memory_id)
);
