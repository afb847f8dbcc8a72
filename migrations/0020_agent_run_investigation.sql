-- A run started to investigate a decision: which one (at most one run per
-- decision), and the tighter bounds it runs under.
ALTER TABLE agent_run ADD COLUMN decision_id TEXT;
ALTER TABLE agent_run ADD COLUMN max_tool_calls BIGINT;
ALTER TABLE agent_run ADD COLUMN max_duration_sec BIGINT;
CREATE UNIQUE INDEX agent_run_decision ON agent_run (decision_id);
