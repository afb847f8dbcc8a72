-- Events waiting for their sequence numbers (PostgreSQL). A writer inserts
-- its events here inside the transaction of the change they describe, and
-- takes no row another writer takes; the sequencer (any node, one at a
-- time under a short lock) moves what has committed into `event`, numbered
-- after everything before it, so a reader resuming from a number never
-- skips an event that committed late. `batch` names one writer's append,
-- `n` its events' order. On SQLite appends number their events at once and
-- this table stays empty.
CREATE TABLE event_intake (
    batch   TEXT NOT NULL,
    n       BIGINT NOT NULL,
    kind    TEXT NOT NULL,
    subject TEXT,
    payload TEXT NOT NULL,
    at      BIGINT NOT NULL,
    PRIMARY KEY (batch, n)
);
CREATE INDEX event_intake_order ON event_intake (at, batch, n);
