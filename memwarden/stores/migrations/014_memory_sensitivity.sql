-- The sensitivity of each memory's current version in the gate's state (issue 14): a FORGET grant
-- covers a memory only up to the grant's sensitivity ceiling, as a READ grant does. Rows written
-- before this migration hold the default until `memwarden replay --in-place` rebuilds them.
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS sensitivity text NOT NULL DEFAULT 'INTERNAL';
