-- The skill a run was started with: read before its first request (a
-- decision's playbook, or one an operator chose). Empty for most runs.
ALTER TABLE agent_run ADD COLUMN skill TEXT;
