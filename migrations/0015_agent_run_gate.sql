-- A run that ended on something another attempt cannot change by itself
-- (the model is not configured, the day's budget is spent) is blocked: the
-- waker looks at it again only at recheck_at (with backoff) or when
-- something that could change the outcome happens, never every second.
-- resumed_at is when the run last went running, for its duration budget.
ALTER TABLE agent_run ADD COLUMN blocked_on TEXT;
ALTER TABLE agent_run ADD COLUMN blocked_checks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_run ADD COLUMN recheck_at BIGINT;
ALTER TABLE agent_run ADD COLUMN resumed_at BIGINT;
CREATE INDEX agent_run_blocked ON agent_run (blocked_on, recheck_at);
-- One open request per plan state and capability, however many ask at once
-- (duplicates an earlier version let in are expired first).
UPDATE approval SET status = 'expired' WHERE status = 'pending' AND id NOT IN (
    SELECT MIN(id) FROM approval WHERE status = 'pending'
    GROUP BY plan_type, plan_id, payload_hash, revision, capability_id
);
CREATE UNIQUE INDEX approval_one_pending ON approval (plan_type, plan_id, payload_hash, revision, capability_id)
    WHERE status = 'pending';
