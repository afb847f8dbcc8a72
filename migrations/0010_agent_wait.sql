-- A waiting run holds no worker: it records when to look again (wake_at)
-- and when to stop waiting (wait_until), and a waker queues its task then.
ALTER TABLE agent_run ADD COLUMN wake_at BIGINT;
ALTER TABLE agent_run ADD COLUMN wait_until BIGINT;
CREATE INDEX agent_run_wake ON agent_run (status, wake_at);
