-- Governed write state (issue 3) and grants (issue 4). The gate reads and writes these tables in the
-- same transaction as its decisions, so a crash or rebalance never decides on stale state.
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS scope text NOT NULL DEFAULT '';
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS fact_entity text;
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS fact_attribute text;
ALTER TABLE gate_memories ADD COLUMN IF NOT EXISTS current_command_id uuid;  -- command whose gate_decisions row
                                                                          -- holds the current MemoryRecorded

CREATE TABLE IF NOT EXISTS gate_principals (
    principal_id text PRIMARY KEY,
    record       jsonb NOT NULL,            -- kind, roles, attributes, keys (public keys in base64)
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS gate_policies (
    policy_id  text    NOT NULL,
    version    integer NOT NULL,
    document   text    NOT NULL,
    adopted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (policy_id, version)
);

CREATE TABLE IF NOT EXISTS grants (
    grant_id      text PRIMARY KEY,
    grantee       text   NOT NULL,
    record        jsonb  NOT NULL,          -- every Grant field
    valid_from_ms bigint NOT NULL,
    valid_to_ms   bigint,
    revoked_at_ms bigint
);
CREATE INDEX IF NOT EXISTS grants_grantee ON grants (grantee);

CREATE TABLE IF NOT EXISTS gate_protected_facts (
    subject   text NOT NULL,
    entity    text NOT NULL,
    attribute text NOT NULL,
    PRIMARY KEY (subject, entity, attribute)
);

CREATE TABLE IF NOT EXISTS gate_facts (
    subject   text NOT NULL,
    entity    text NOT NULL,
    attribute text NOT NULL,
    value     text NOT NULL,
    memory_id uuid NOT NULL,
    PRIMARY KEY (subject, entity, attribute)
);
CREATE INDEX IF NOT EXISTS gate_facts_memory ON gate_facts (memory_id);

CREATE TABLE IF NOT EXISTS gate_claims (
    subject      text    NOT NULL,
    key_digest   text    NOT NULL,
    value_digest text,
    positive     boolean NOT NULL,
    memory_id    uuid    NOT NULL,
    PRIMARY KEY (subject, key_digest, memory_id)
);
CREATE INDEX IF NOT EXISTS gate_claims_memory ON gate_claims (memory_id);

CREATE TABLE IF NOT EXISTS gate_twins (
    subject   text NOT NULL,
    digest    text NOT NULL,
    memory_id uuid NOT NULL,
    PRIMARY KEY (subject, digest)
);
CREATE INDEX IF NOT EXISTS gate_twins_memory ON gate_twins (memory_id);

CREATE TABLE IF NOT EXISTS gate_quarantine (
    command_id  uuid PRIMARY KEY,
    memory_id   uuid NOT NULL,
    principal   text NOT NULL,
    subject     text NOT NULL,
    status      text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    key_id      uuid,
    command     bytea NOT NULL,            -- the quarantined command as published (signed)
    reasons     jsonb NOT NULL,
    ledger_partition integer NOT NULL,
    ledger_offset    bigint  NOT NULL,
    quarantined_at   timestamptz NOT NULL,
    reviewed_by      text,
    reviewed_at      timestamptz
);
CREATE INDEX IF NOT EXISTS gate_quarantine_status ON gate_quarantine (status);

-- Freshness (issue 4, SSGM Eq. 3): last valid use of a memory, from MemoryUsed events.
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS last_used_at timestamptz;
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS unverified boolean NOT NULL DEFAULT false;
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS approved_by text;
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS closed_by uuid;  -- memory that superseded it automatically
ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS closed_at timestamptz;  -- when the ledger closed its interval

-- Every record a decision published (decision, events, registry entries, key tombstones), so that a
-- redelivered command re-sends exactly the same records.
ALTER TABLE gate_decisions ADD COLUMN IF NOT EXISTS outputs jsonb;
