-- memwarden profile state, gate state and projection tracking, inside the namespace schema.
CREATE TABLE IF NOT EXISTS gate_decisions (
    command_id       uuid PRIMARY KEY,
    outcome          text        NOT NULL,
    ledger_partition integer     NOT NULL,
    ledger_offset    bigint      NOT NULL,
    decision         bytea       NOT NULL,   -- the GateDecided record as published
    event            bytea,                  -- the event as published, if admitted
    decided_at       timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS gate_memories (
    memory_id uuid PRIMARY KEY,
    subject   text    NOT NULL,
    owner     text    NOT NULL,
    version   integer NOT NULL,
    forgotten boolean NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS memory_versions (
    memory_id         uuid        NOT NULL,
    version           integer     NOT NULL,
    command_id        uuid        NOT NULL UNIQUE,
    event_id          uuid        NOT NULL,
    principal         text        NOT NULL,
    subject           text        NOT NULL,
    scope             text        NOT NULL,
    store_kind        text        NOT NULL,
    source_kind       text        NOT NULL,
    source_ref        text,
    source_uri        text,
    derived_from      uuid[]      NOT NULL DEFAULT '{}',
    epistemic_status  text        NOT NULL,
    sensitivity       text        NOT NULL,
    purposes          text[]      NOT NULL DEFAULT '{}',
    content           text,                     -- NULL once forgotten
    content_key_id    uuid        NOT NULL,
    fact_entity       text,
    fact_attribute    text,
    fact_value        text,
    observed_at       timestamptz NOT NULL,
    valid_from        timestamptz NOT NULL,
    valid_to          timestamptz,              -- exclusive; NULL = open
    expires_at        timestamptz,
    status            text        NOT NULL CHECK (status IN ('active', 'superseded', 'forgotten', 'quarantined')),
    superseded_by     uuid,                     -- command id of the superseding version
    forgotten_by      uuid,                     -- command id of the ForgetMemory
    ledger_topic      text        NOT NULL,
    ledger_partition  integer     NOT NULL,
    ledger_offset     bigint      NOT NULL,
    decided_at        timestamptz NOT NULL,
    projected_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, version)
);
CREATE INDEX IF NOT EXISTS memory_versions_principal ON memory_versions (principal, status);
CREATE INDEX IF NOT EXISTS memory_versions_subject ON memory_versions (subject, status);

-- Exactly-once projection: a projector's row changes and its next offset commit in one transaction.
CREATE TABLE IF NOT EXISTS projection_offsets (
    projector   text    NOT NULL,
    topic       text    NOT NULL,
    partition   integer NOT NULL,
    next_offset bigint  NOT NULL,
    PRIMARY KEY (projector, topic, partition)
);
