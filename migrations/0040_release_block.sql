-- Releases the sweep must not pick again, whoever wants them: one whose
-- download or import failed, given up by the operator or by a decision's
-- "find another release". Unblocking deletes the row.
CREATE TABLE release_block (
    release_id TEXT PRIMARY KEY REFERENCES source_release (id),
    reason     TEXT NOT NULL,
    blocked_by TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
