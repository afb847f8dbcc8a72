-- Why an operator gave a standing grant, as they wrote it.
ALTER TABLE automation_grant ADD COLUMN reason TEXT;
