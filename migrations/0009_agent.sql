-- Agent runs: the run itself (goal, mode, status, what it has spent), the
-- user messages sent to it, and its own ordered event stream. Each event is
-- also published on the global event log.

CREATE TABLE agent_run (
    id            TEXT PRIMARY KEY,
    goal          TEXT NOT NULL,
    mode          TEXT NOT NULL,
    allowlist     TEXT,
    status        TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    task_id       TEXT,
    report_id     TEXT,
    final_text    TEXT,
    error         TEXT,
    abort_reason  TEXT,
    tool_calls    BIGINT NOT NULL DEFAULT 0,
    tokens        BIGINT NOT NULL DEFAULT 0,
    cost_micro_usd BIGINT NOT NULL DEFAULT 0,
    started_at    BIGINT,
    finished_at   BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX agent_run_created ON agent_run (created_at);

CREATE TABLE agent_run_message (
    run_id     TEXT NOT NULL REFERENCES agent_run (id),
    seq        BIGINT NOT NULL,
    text       TEXT NOT NULL,
    consumed   BIGINT NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE agent_run_event (
    run_id  TEXT NOT NULL REFERENCES agent_run (id),
    seq     BIGINT NOT NULL,
    kind    TEXT NOT NULL,
    payload TEXT NOT NULL,
    at      BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
