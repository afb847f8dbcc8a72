-- A message either goes on with the run's current task (its plan, its
-- request scope) or, when the sender says so, starts a new task.
ALTER TABLE agent_run_message ADD COLUMN new_task BIGINT NOT NULL DEFAULT 0;
-- The run's current plan (the model's notes), as the session log last
-- recorded it, so reading a run does not mean reading its log.
ALTER TABLE agent_run ADD COLUMN plan TEXT;
-- A new write is checked against an earlier identical one of the same
-- caller whose outcome is still open; the rows of one run are read when
-- it goes on and when it is deleted.
CREATE INDEX capability_invocation_uncertain ON capability_invocation (principal, capability_id, input_digest)
    WHERE status IN ('running', 'unknown');
CREATE INDEX capability_invocation_run ON capability_invocation (run_id);
