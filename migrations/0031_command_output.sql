-- Command output kept where every node of a PostgreSQL cluster reads it, so
-- that a run going on on another node still reads what its commands wrote.
-- On SQLite (one machine) the archives stay files and these tables are empty.
-- `command_output` is a process's state as its node last wrote it, with a
-- heartbeat (`seen_at`, ms since the epoch): a running process whose node
-- went silent is `unknown` to readers. `command_output_page` holds the
-- archive's bytes, a page per row, `at` the offset of the page's first byte.
CREATE TABLE command_output (
    handle TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    command TEXT NOT NULL,
    written BIGINT NOT NULL DEFAULT 0,
    kept BIGINT NOT NULL DEFAULT 0,
    truncated BIGINT NOT NULL DEFAULT 0,
    head BYTEA,
    tail BYTEA,
    outcome TEXT,
    exit_code BIGINT,
    duration_ms BIGINT NOT NULL DEFAULT 0,
    seen_at BIGINT NOT NULL
);
CREATE INDEX command_output_seen ON command_output (seen_at);
CREATE TABLE command_output_page (
    handle TEXT NOT NULL,
    at BIGINT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (handle, at)
);
