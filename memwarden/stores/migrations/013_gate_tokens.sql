-- Bearer tokens of the gateways (issue 10): written by the gate from IssueToken / RevokeToken in the
-- transaction of its decisions; read by the REST API to authenticate a request by the token's hash.
-- Only the SHA-256 of a token is kept, never the token.
CREATE TABLE IF NOT EXISTS gate_tokens (
    token_id       text PRIMARY KEY,
    principal      text   NOT NULL,
    token_sha256   bytea  NOT NULL UNIQUE,
    issued_by      text   NOT NULL,
    issued_at_ms   bigint NOT NULL,
    expires_ms     bigint,
    revoked_at_ms  bigint
);
CREATE INDEX IF NOT EXISTS gate_tokens_principal ON gate_tokens (principal);
