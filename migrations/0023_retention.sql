-- A run deleted while some of its writes still have an open outcome is
-- kept, marked deleted, until they are settled; the rest of it goes at once.
ALTER TABLE agent_run ADD COLUMN deleted_at BIGINT;
CREATE INDEX agent_run_deleted ON agent_run (deleted_at);
-- A run's events leave the global log with it.
CREATE INDEX event_subject ON event (subject);
-- Receipts without a run are pruned by age.
CREATE INDEX capability_invocation_age ON capability_invocation (status, updated_at);
