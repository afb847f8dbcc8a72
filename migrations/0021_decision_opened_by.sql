-- The capability whose component opened a decision through the drafts
-- import; NULL for the host's own decisions.
ALTER TABLE decision ADD COLUMN opened_by TEXT;
CREATE INDEX decision_opened_by ON decision (opened_by, status);
