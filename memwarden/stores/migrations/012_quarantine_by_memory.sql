-- A forget of a memory that exists only as a command held for review finds it by memory id.
CREATE INDEX IF NOT EXISTS gate_quarantine_memory ON gate_quarantine (memory_id) WHERE status = 'pending';
