//! How an attempt ended, fenced by the lease token: succeeded, queued again
//! after a backoff, or dead. A worker's outcome and its audit row commit
//! together, so a crash or a slow writer never leaves a finished task
//! unaudited, nor an audited outcome unrecorded.

use super::{Task, TaskError, TaskStatus, Tasks, backoff};
use crate::audit::{Audit, NewAuditEntry};
use crate::store::now_ms;

/// A value bound to a task statement run through the group commit.
#[derive(Clone)]
pub(super) enum Bind {
    Text(Option<String>),
    Int(i64),
}

pub(super) fn text(value: &str) -> Bind {
    Bind::Text(Some(value.to_string()))
}

/// The audit row of an outcome recorded by `principal` (a worker).
fn outcome_event(task: &Task, status: TaskStatus, principal: &str, error: Option<&str>) -> NewAuditEntry {
    let action = match status {
        TaskStatus::Succeeded => "task.succeeded",
        TaskStatus::Dead => "task.dead",
        _ => "task.failed",
    };
    NewAuditEntry {
        actor_kind: "task".into(),
        principal: principal.to_string(),
        action: action.into(),
        subject: task.id.clone(),
        outcome: if status == TaskStatus::Succeeded { "succeeded" } else { "failed" }.into(),
        detail: error.map(|e| format!("attempt {}: {e}", task.attempts)),
        ..NewAuditEntry::default()
    }
}

impl Tasks {
    /// Records success, fenced by the lease token; audited as by
    /// `audit_as` in the same commit when given.
    pub async fn succeed(
        &self,
        task: &Task,
        result: &serde_json::Value,
        audit_as: Option<&str>,
    ) -> Result<(), TaskError> {
        let event = audit_as.map(|by| outcome_event(task, TaskStatus::Succeeded, by, None));
        let n = self
            .update(
                "UPDATE task SET status = 'succeeded', result = $1, lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = $2 WHERE id = $3 AND lease_token = $4 AND status = 'running'",
                vec![
                    Bind::Text(Some(result.to_string())),
                    Bind::Int(now_ms()),
                    text(&task.id),
                    Bind::Text(task.lease_token.clone()),
                ],
                event,
            )
            .await?;
        if n == 0 { Err(TaskError::LeaseLost(task.id.clone())) } else { Ok(()) }
    }

    /// Records a failed attempt: queued again after a backoff, or dead when
    /// the attempts are used up. Returns the new status.
    pub async fn fail(&self, task: &Task, error: &str, audit_as: Option<&str>) -> Result<TaskStatus, TaskError> {
        self.record_failure(task, error, task.attempts >= task.max_attempts, audit_as).await
    }

    /// Records a failed attempt that no further attempt can mend: the task
    /// is dead at once, whatever attempts it has left.
    pub async fn give_up(&self, task: &Task, error: &str, audit_as: Option<&str>) -> Result<TaskStatus, TaskError> {
        self.record_failure(task, error, true, audit_as).await
    }

    async fn record_failure(
        &self,
        task: &Task,
        error: &str,
        dead: bool,
        audit_as: Option<&str>,
    ) -> Result<TaskStatus, TaskError> {
        let status = if dead { TaskStatus::Dead } else { TaskStatus::Queued };
        let event = audit_as.map(|by| outcome_event(task, status, by, Some(error)));
        let run_after = now_ms() + backoff(task.attempts).as_millis() as i64;
        let n = self
            .update(
                "UPDATE task SET status = $1, last_error = $2, run_after = $3, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = $4 WHERE id = $5 AND lease_token = $6 AND status = 'running'",
                vec![
                    text(status.as_str()),
                    text(error),
                    Bind::Int(run_after),
                    Bind::Int(now_ms()),
                    text(&task.id),
                    Bind::Text(task.lease_token.clone()),
                ],
                event,
            )
            .await?;
        if n == 0 { Err(TaskError::LeaseLost(task.id.clone())) } else { Ok(status) }
    }

    /// Runs one statement through the group commit, with `event` appended
    /// to the audit log in the same commit when the statement changed a
    /// row; how many rows it changed.
    pub(super) async fn update(
        &self,
        sql: &'static str,
        binds: Vec<Bind>,
        event: Option<NewAuditEntry>,
    ) -> Result<u64, sqlx::Error> {
        self.db
            .write(move |tx| {
                let (binds, event) = (binds.clone(), event.clone());
                Box::pin(async move {
                    let mut query = sqlx::query(sql);
                    for bind in binds {
                        query = match bind {
                            Bind::Text(v) => query.bind(v),
                            Bind::Int(v) => query.bind(v),
                        };
                    }
                    let changed = query.execute(&mut **tx).await?.rows_affected();
                    if let (true, Some(event)) = (changed > 0, &event) {
                        Audit::append_in(tx, event).await?;
                    }
                    Ok(changed)
                })
            })
            .await
    }
}
