-- Durable tasks: queued work with attempts, backoff, dedupe keys and leases.

CREATE TABLE task (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    subject          TEXT,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    max_attempts     BIGINT NOT NULL,
    run_after        BIGINT NOT NULL,
    dedupe_key       TEXT,
    lease_owner      TEXT,
    lease_token      TEXT,
    lease_expires_at BIGINT,
    result           TEXT,
    last_error       TEXT,
    created_by       TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
-- One active task per dedupe key; finished ones may repeat it.
CREATE UNIQUE INDEX task_dedupe_active ON task (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running');
CREATE INDEX task_ready ON task (status, run_after);
CREATE INDEX task_subject ON task (subject);
