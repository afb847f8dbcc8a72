-- Audit rows waiting to be chained (PostgreSQL). A writer inserts its rows
-- here inside the transaction of what they record, taking no row another
-- writer takes; the sequencer (any node, one at a time under a short lock)
-- chains what has committed onto `audit_event` in batches, each row's hash
-- over its contents and the row before it. Until then `audit verify` counts
-- them as waiting. On SQLite appends chain their rows at once and this
-- table stays empty.
CREATE TABLE audit_intake (
    batch           TEXT NOT NULL,
    n               BIGINT NOT NULL,
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
    PRIMARY KEY (batch, n)
);
CREATE INDEX audit_intake_order ON audit_intake (at, batch, n);
