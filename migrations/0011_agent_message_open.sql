-- The waker looks for messages not yet taken every second; it should not
-- visit every finished run to find them.
CREATE INDEX agent_run_message_open ON agent_run_message (consumed, run_id);
