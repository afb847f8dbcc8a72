-- The last point up to which the audit chain was verified: an online check
-- goes on from there instead of walking the whole chain again.
CREATE TABLE audit_checkpoint (
    id INTEGER PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    verified_at BIGINT NOT NULL
);
