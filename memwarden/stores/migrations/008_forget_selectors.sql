-- Forgetting by selector, lineage and legal hold (issue 14 part 3). The gate keeps, per memory, what a
-- ForgetMatching / ForgetSubject / repair selects on (ids, names, times: never content) and what it
-- derives from, so it decides a forget of many memories from its own state in one transaction.
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS store_kind text NOT NULL DEFAULT 'PROFILE';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS observed_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS expires_ms bigint;
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS sources text[] NOT NULL DEFAULT '{}';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS writers text[] NOT NULL DEFAULT '{}';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS signer_keys text[] NOT NULL DEFAULT '{}';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS derived_from uuid[] NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS gate_memories_subject ON gate_memories (subject) WHERE NOT forgotten;
CREATE INDEX IF NOT EXISTS gate_memories_scope ON gate_memories (scope) WHERE NOT forgotten;
CREATE INDEX IF NOT EXISTS gate_memories_expires ON gate_memories (expires_ms) WHERE NOT forgotten AND expires_ms IS NOT NULL;
CREATE INDEX IF NOT EXISTS gate_memories_derived ON gate_memories USING gin (derived_from);

-- Legal holds: a forget of a memory a hold in force covers waits (gate_deferred) until it is lifted.
CREATE TABLE IF NOT EXISTS gate_holds (
    hold_id   text PRIMARY KEY,
    subjects  text[] NOT NULL DEFAULT '{}',
    scopes    text[] NOT NULL DEFAULT '{}',
    active    boolean NOT NULL DEFAULT true
);
CREATE TABLE IF NOT EXISTS gate_deferred (
    command_id  uuid PRIMARY KEY,
    principal   text NOT NULL,
    reason      text NOT NULL DEFAULT '',
    memory_ids  uuid[] NOT NULL
);
