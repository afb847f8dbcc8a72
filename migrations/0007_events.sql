-- The global event log: what happened, in one increasing sequence that
-- readers resume from. Appends take the head row first, so sequence numbers
-- commit in order and a reader never skips one that commits later.

CREATE TABLE event_head (
    id  BIGINT PRIMARY KEY,
    seq BIGINT NOT NULL
);
INSERT INTO event_head (id, seq) VALUES (1, 0);

CREATE TABLE event (
    seq     BIGINT PRIMARY KEY,
    kind    TEXT NOT NULL,
    subject TEXT,
    payload TEXT NOT NULL,
    at      BIGINT NOT NULL
);
