//! Capability `task.retry` (label execute): queues a dead, failed or
//! cancelled background task again with fresh attempts, through the
//! `records` transition `task.retry`.
//! The store decides whether the task's state allows it; a refusal comes
//! back as `conflict` and changes nothing.

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::{ById, transitions};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

/// Input: the task.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryInput {
    pub task_id: String,
}

/// Output: the task as it is now.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryOutput {
    pub id: String,
    pub kind: String,
    /// The new status (`queued`).
    pub status: String,
    pub attempts: i64,
    pub max_attempts: i64,
}

/// The capability.
pub struct TaskRetry;

impl Capability for TaskRetry {
    type Input = RetryInput;
    type Output = RetryOutput;

    const META: Meta = Meta {
        id: "task.retry",
        version: 1,
        label: Label::Execute,
        summary: "Queue a dead, failed or cancelled background task again with fresh attempts",
        description: "Queues a durable task that died, failed or was cancelled again, with its attempts reset; the worker picks it up at once. A task that is still queued, running or already succeeded cannot be retried (conflict).",
        tags: &["task", "policy.automation"],
        aliases: &["retry task", "try again", "rerun", "重试", "重试任务", "再试一次"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: RetryInput) -> Result<Outcome<RetryOutput>, Failure> {
        let id = input.task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("taskId must not be empty".into()));
        }
        let task = domain::call::<transitions::TaskRetryRecord>(&ById::new(id))?;
        Ok(Outcome::Succeeded(RetryOutput {
            id: task.id,
            kind: task.kind,
            status: task.status.as_str().to_string(),
            attempts: task.attempts,
            max_attempts: task.max_attempts,
        }))
    }
}

capstan_sdk::export_capability!(TaskRetry);
