-- Runs waiting on a human's approval: a run whose write was refused for want
-- of authority asks for an approval of the plan, and is sent a message when
-- a human approves it.
CREATE TABLE agent_run_approval (
    run_id      TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, approval_id)
);
CREATE INDEX agent_run_approval_by_approval ON agent_run_approval (approval_id);
