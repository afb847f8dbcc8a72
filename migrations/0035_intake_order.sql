-- The order the sequencers take intake rows in. A writer's transaction id
-- (`tx_order`, PostgreSQL's `txid_current()`) is given after every
-- transaction that committed before it began, so an append that follows
-- another's commit is numbered after it even within one millisecond;
-- `call_order` orders the appends one transaction makes. Rows written
-- before this migration keep 0 and are taken first, as before.
ALTER TABLE event_intake ADD COLUMN tx_order BIGINT NOT NULL DEFAULT 0;
ALTER TABLE event_intake ADD COLUMN call_order BIGINT NOT NULL DEFAULT 0;
DROP INDEX event_intake_order;
CREATE INDEX event_intake_order ON event_intake (tx_order, call_order, n);
ALTER TABLE audit_intake ADD COLUMN tx_order BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_intake ADD COLUMN call_order BIGINT NOT NULL DEFAULT 0;
DROP INDEX audit_intake_order;
CREATE INDEX audit_intake_order ON audit_intake (tx_order, call_order, n);
