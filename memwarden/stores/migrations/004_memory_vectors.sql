-- Embeddings kept once, sealed under the memory version's own data key (AES-256-GCM, associated data
-- "vector:<point_id>:<model>"), so that a replay does not embed again and a forget (the key's
-- tombstone) makes them unrecoverable like the text: crypto-shredding covers the derived index too.
CREATE TABLE IF NOT EXISTS memory_vectors (
    point_id  uuid  PRIMARY KEY,
    key_id    uuid  NOT NULL,
    model     text  NOT NULL,
    nonce     bytea NOT NULL,
    sealed    bytea NOT NULL
);
