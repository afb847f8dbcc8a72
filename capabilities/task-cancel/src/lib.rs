//! Capability `task.cancel` (label execute): cancels a queued or running
//! background task, through the `records` transition `task.cancel`.
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
pub struct CancelInput {
    pub task_id: String,
}

/// Output: the task as it is now.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelOutput {
    pub id: String,
    pub kind: String,
    /// The new status (`cancelled`).
    pub status: String,
    pub attempts: i64,
    pub max_attempts: i64,
}

/// The capability.
pub struct TaskCancel;

impl Capability for TaskCancel {
    type Input = CancelInput;
    type Output = CancelOutput;

    const META: Meta = Meta {
        id: "task.cancel",
        version: 1,
        label: Label::Execute,
        summary: "Cancel a queued or running background task",
        description: "Cancels a durable task that is queued or running; a running handler stops when it next renews its lease. A task that already finished (succeeded, failed, dead or cancelled) cannot be cancelled (conflict).",
        tags: &["task"],
        aliases: &["cancel task", "stop task", "abort", "取消", "取消任务", "停止任务"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: CancelInput) -> Result<Outcome<CancelOutput>, Failure> {
        let id = input.task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("taskId must not be empty".into()));
        }
        let task = domain::call::<transitions::TaskCancelRecord>(&ById::new(id))?;
        Ok(Outcome::Succeeded(CancelOutput {
            id: task.id,
            kind: task.kind,
            status: task.status.as_str().to_string(),
            attempts: task.attempts,
            max_attempts: task.max_attempts,
        }))
    }
}

capstan_sdk::export_capability!(TaskCancel);
