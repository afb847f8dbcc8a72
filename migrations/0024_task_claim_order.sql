-- A claim takes the first ready task in (run_after, id) order; with the id
-- in the index both backends read it straight off the index instead of
-- sorting every queued task on every claim.
CREATE INDEX task_claim_order ON task (status, run_after, id);
DROP INDEX task_ready;
