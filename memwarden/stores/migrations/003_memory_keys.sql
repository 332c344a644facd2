-- The data keys of every version of a memory, so that the gate's ForgetMemory decision itself carries
-- the key tombstones (stored with the decision, re-sent on redelivery: no crash gap between the
-- forget and the shredding).
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS key_ids uuid[] NOT NULL DEFAULT '{}';

-- The gate looks content digests up by digest alone (the subject is inside the keyed digest).
CREATE INDEX IF NOT EXISTS gate_twins_digest ON gate_twins (digest);
