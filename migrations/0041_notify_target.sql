-- Where each notification target (a notify.* capability whose service is
-- set up) stands in the event log: the last event it was told about, and
-- the sends that failed since (with the last reason), so a failure is sent
-- again later and shown to the operator, and never holds the pipeline up.
CREATE TABLE notify_target (
    capability_id TEXT PRIMARY KEY,
    after_seq     BIGINT NOT NULL,
    failures      BIGINT NOT NULL,
    last_error    TEXT,
    last_sent_at  BIGINT,
    updated_at    BIGINT NOT NULL
);
