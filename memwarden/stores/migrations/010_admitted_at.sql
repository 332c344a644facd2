-- When the gate admitted each memory's current version (its decision's clock, UTC epoch ms): the
-- window a repair by writer uses, which a compromised writer cannot back-date as it can observed_at.
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS admitted_ms bigint NOT NULL DEFAULT 0;
