-- The media domain: what the library should hold (entities and their
-- slots), what was found (source releases), what is planned and running
-- (acquisition plans, download tasks, organizations), the documents they
-- produce (artifacts), the questions left for a human (decisions), and the
-- approvals bound to plans.

CREATE TABLE media_entity (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    tmdb_id        BIGINT,
    title          TEXT NOT NULL,
    original_title TEXT,
    year           BIGINT,
    seasons        TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX media_entity_tmdb ON media_entity (kind, tmdb_id);

CREATE TABLE media_slot (
    id         TEXT PRIMARY KEY,
    entity_id  TEXT NOT NULL REFERENCES media_entity (id),
    season     BIGINT,
    quality    TEXT NOT NULL,
    profile    TEXT,
    status     TEXT NOT NULL,
    revision   BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX media_slot_entity ON media_slot (entity_id, created_at);

CREATE TABLE source_release (
    id              TEXT PRIMARY KEY,
    indexer         TEXT NOT NULL,
    title           TEXT NOT NULL,
    parsed          TEXT NOT NULL,
    size            BIGINT,
    infohash        TEXT,
    download_url    TEXT,
    entity_id       TEXT REFERENCES media_entity (id),
    identity_status TEXT NOT NULL,
    evidence        TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX source_release_infohash ON source_release (infohash);

CREATE TABLE acquisition_plan (
    id                TEXT PRIMARY KEY,
    slot_id           TEXT NOT NULL REFERENCES media_slot (id),
    source_release_id TEXT NOT NULL REFERENCES source_release (id),
    status            TEXT NOT NULL,
    payload           TEXT NOT NULL,
    payload_hash      TEXT NOT NULL,
    revision          BIGINT NOT NULL,
    slot_revision     BIGINT NOT NULL,
    note              TEXT,
    reason            TEXT,
    created_by        TEXT NOT NULL,
    run_id            TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX acquisition_plan_slot ON acquisition_plan (slot_id, status);

CREATE TABLE download_task (
    id           TEXT PRIMARY KEY,
    plan_id      TEXT NOT NULL UNIQUE REFERENCES acquisition_plan (id),
    client_hash  TEXT NOT NULL,
    status       TEXT NOT NULL,
    progress     DOUBLE PRECISION NOT NULL,
    content_path TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX download_task_status ON download_task (status);

CREATE TABLE artifact (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    subject      TEXT,
    body         TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    run_id       TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX artifact_subject ON artifact (subject);

CREATE TABLE organization (
    id               TEXT PRIMARY KEY,
    download_task_id TEXT NOT NULL REFERENCES download_task (id),
    plan_artifact_id TEXT NOT NULL REFERENCES artifact (id),
    mode             TEXT NOT NULL,
    items            TEXT NOT NULL,
    status           TEXT NOT NULL,
    revision         BIGINT NOT NULL,
    error            TEXT,
    created_by       TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX organization_download ON organization (download_task_id);

CREATE TABLE decision (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    subject    TEXT,
    status     TEXT NOT NULL,
    options    TEXT NOT NULL,
    evidence   TEXT NOT NULL,
    resolution TEXT,
    dedupe_key TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE approval (
    id           TEXT PRIMARY KEY,
    plan_type    TEXT NOT NULL,
    plan_id      TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    revision     BIGINT NOT NULL,
    status       TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    plan_creator TEXT NOT NULL,
    decided_by   TEXT,
    expires_at   BIGINT NOT NULL,
    consumed_by  TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX approval_plan ON approval (plan_type, plan_id, status);
