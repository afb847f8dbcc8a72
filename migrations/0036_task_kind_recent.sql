-- A schedule kept by several nodes asks whether a task of its kind was
-- queued lately (`Tasks::queued_within`) before queuing its own. Without
-- this index that question reads every task ever queued of every kind,
-- and the task table only grows.
CREATE INDEX task_kind_created ON task (kind, created_at);
