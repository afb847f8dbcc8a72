-- Decisions a human sees and resolves: who resolved or dismissed one, and
-- the newest-first listing by status.
ALTER TABLE decision ADD COLUMN resolved_by TEXT;
CREATE INDEX decision_status_created ON decision (status, created_at);
