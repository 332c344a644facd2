-- Forgets whose erasure receipt is on the ledger (issue 11, a kill under load): a decision re-sent
-- after a worker was killed between publishing it and recording its offsets appends its
-- MemoryForgotten a second time, possibly after the receipt; the projector then must not owe that
-- receipt again. A projection of the events topic like erasure_pending; ids only.
CREATE TABLE IF NOT EXISTS erasure_receipted (
    command_id  uuid NOT NULL,
    memory_id   uuid NOT NULL,
    PRIMARY KEY (command_id, memory_id)
);
