-- The invocation ledger, the audit chain and process heartbeats.
-- Timestamps are milliseconds since the Unix epoch; JSON is stored as text.

CREATE TABLE capability_invocation (
    id                 TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    capability_id      TEXT NOT NULL,
    capability_version BIGINT NOT NULL,
    actor_kind         TEXT NOT NULL,
    principal          TEXT NOT NULL,
    run_id             TEXT,
    task_id            TEXT,
    tool_call_id       TEXT,
    input_digest       TEXT NOT NULL,
    status             TEXT NOT NULL,
    claim_token        TEXT NOT NULL,
    owner              TEXT NOT NULL,
    attempts           BIGINT NOT NULL DEFAULT 1,
    effect_started     BIGINT NOT NULL DEFAULT 0,
    result             TEXT,
    error              TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    finished_at        BIGINT
);
CREATE UNIQUE INDEX capability_invocation_tool_call
    ON capability_invocation (run_id, tool_call_id) WHERE tool_call_id IS NOT NULL;
CREATE INDEX capability_invocation_status ON capability_invocation (status, owner);

CREATE TABLE audit_event (
    seq             BIGINT PRIMARY KEY,
    at              BIGINT NOT NULL,
    actor_kind      TEXT NOT NULL,
    principal       TEXT NOT NULL,
    action          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    authorization_id TEXT,
    idempotency_key TEXT,
    input_summary   TEXT,
    detail          TEXT,
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL
);

-- One row: the head of the audit chain. Updating it serialises appends.
CREATE TABLE audit_head (
    id   BIGINT PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, 'genesis');

CREATE TABLE process_heartbeat (
    owner        TEXT PRIMARY KEY,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);
