-- When a download last moved: its progress grew or its status changed.
-- A download that has not moved for the configured time is stalled.
ALTER TABLE download_task ADD COLUMN progress_at BIGINT;
UPDATE download_task SET progress_at = updated_at;
