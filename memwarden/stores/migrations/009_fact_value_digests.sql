-- No typed-fact value at rest (issue 14): a fact slot keeps the keyed digest of its folded value
-- (HMAC-SHA256 under the namespace's digest key, derived from the KEK; commands/facts.py value_digest),
-- never the value. The ledger carries the value sealed under the memory's data key, so a forget shreds
-- it with the text. Entity and attribute stay: they are slot names the checks are routed by.
--
-- Existing rows: their clear value is dropped here, and the table is rewritten (CLUSTER) so the
-- dropped values leave its heap files too (copies in old WAL segments and backups are out of reach of
-- a migration). SQL cannot compute the keyed digest (the key is not in the database), so such a slot
-- keeps its holder with an unknown value (NULL), which the gate compares as a different one: a
-- protected slot refuses a write with another fact rather than admit it, an unprotected one is
-- superseded by the next write of the slot. `memwarden replay --in-place` rebuilds every slot's digest
-- from the ledger.
ALTER TABLE gate_facts ADD COLUMN IF NOT EXISTS value_digest text;
ALTER TABLE gate_facts DROP COLUMN IF EXISTS value;
CLUSTER gate_facts USING gate_facts_pkey;
