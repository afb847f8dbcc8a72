-- How handing a drafted plan to the download client has gone: how many
-- submits in a row failed, the last reason, when this run of failures
-- began, and when the sweep may try again on its own (a backoff; cleared
-- when a service passes its Test, a setting changes, or a human asks to
-- try again now). All empty for a plan whose submits never failed.
ALTER TABLE acquisition_plan ADD COLUMN submit_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE acquisition_plan ADD COLUMN last_failure TEXT;
ALTER TABLE acquisition_plan ADD COLUMN failing_since BIGINT;
ALTER TABLE acquisition_plan ADD COLUMN retry_at BIGINT;
