-- No plaintext at rest (issue 14): a memory version's text is kept as the ledger carries it, sealed
-- under the version's own data key (AES-256-GCM, associated data = key id), and opened on read with the
-- key ring. Once a forget shreds the key the sealed bytes are noise in the heap, the WAL and every
-- backup alike. A typed fact's value is not kept here (the gate holds the slots it compares).
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS content_nonce bytea;   -- NULL once forgotten
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS content_sealed bytea;  -- NULL once forgotten
ALTER TABLE memory_versions DROP COLUMN IF EXISTS content;
ALTER TABLE memory_versions DROP COLUMN IF EXISTS fact_value;
