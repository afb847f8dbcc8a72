-- Authorisation records: policies with revisions, standing automation
-- grants with daily budgets, and host settings (the automation switches).

CREATE TABLE policy (
    name        TEXT NOT NULL,
    revision    BIGINT NOT NULL,
    status      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (name, revision)
);

CREATE TABLE automation_grant (
    id                TEXT PRIMARY KEY,
    action            TEXT NOT NULL,
    policy_name       TEXT,
    policy_revision   BIGINT,
    scope             TEXT NOT NULL,
    daily_invocations BIGINT NOT NULL,
    daily_bytes       BIGINT NOT NULL,
    expires_at        BIGINT NOT NULL,
    revoked_at        BIGINT,
    created_by        TEXT NOT NULL,
    created_at        BIGINT NOT NULL
);

CREATE TABLE grant_usage (
    grant_id    TEXT NOT NULL,
    day         TEXT NOT NULL,
    invocations BIGINT NOT NULL,
    bytes       BIGINT NOT NULL,
    PRIMARY KEY (grant_id, day)
);

CREATE TABLE setting (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
