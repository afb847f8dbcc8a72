//! Capability `task.inspect` (label read): the durable tasks behind the
//! library's background work — one task by id, or the newest tasks
//! (optionally about one subject) — with status, attempts and last error,
//! so a user can see why something is stuck. Reads through `library`.

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{TaskGet, TasksList, TasksListed};
use capstan_sdk::contract::records::Task;
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

/// Input: `{taskId}` for one task, or `{subjectId?, limit?}` for a list.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InspectInput {
    /// One task by id.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only tasks about this subject (a plan, download or run id).
    #[serde(default)]
    pub subject_id: Option<String>,
    /// At most this many tasks, newest first (1–200, default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One task as a user needs to see it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    pub id: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// `queued`, `running`, `succeeded`, `failed`, `dead` or `cancelled`.
    pub status: String,
    pub attempts: i64,
    pub max_attempts: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Not before this time (ms since the epoch) will it run again.
    pub run_after: i64,
    pub updated_at: i64,
}

/// Output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InspectOutput {
    pub tasks: Vec<TaskView>,
}

/// A task from `task.get`/`tasks.list` as a [`TaskView`].
pub fn view(task: Task) -> TaskView {
    TaskView {
        id: task.id,
        kind: task.kind,
        subject: task.subject,
        status: task.status.as_str().to_string(),
        attempts: task.attempts,
        max_attempts: task.max_attempts,
        last_error: task.last_error,
        run_after: task.run_after,
        updated_at: task.updated_at,
    }
}

/// The capability.
pub struct TaskInspect;

impl Capability for TaskInspect {
    type Input = InspectInput;
    type Output = InspectOutput;

    const META: Meta = Meta {
        id: "task.inspect",
        version: 1,
        label: Label::Read,
        summary: "Show background tasks with their status, attempts and last error",
        description: "Shows one durable task by id, or the newest tasks (optionally about one subject such as a plan or download): kind, status (queued, running, succeeded, failed, dead, cancelled), attempts used of the maximum, when it runs next and the last error. Use task.retry or task.cancel to act on one.",
        tags: &["task", "status", "diagnostics"],
        aliases: &["task status", "why is it stuck", "background jobs", "任务", "任务状态", "后台任务"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: InspectInput) -> Result<Outcome<InspectOutput>, Failure> {
        if let Some(id) = &input.task_id {
            if input.subject_id.is_some() || input.limit.is_some() {
                return Err(Failure::InvalidInput("give taskId alone, or subjectId and limit".into()));
            }
            if id.trim().is_empty() {
                return Err(Failure::InvalidInput("taskId must not be empty".into()));
            }
            let task = domain::call::<TaskGet>(&ById::new(id.trim()))?;
            return Ok(Outcome::Succeeded(InspectOutput { tasks: vec![view(task)] }));
        }
        let limit = input.limit.unwrap_or(20);
        if !(1..=200).contains(&limit) {
            return Err(Failure::InvalidInput(format!("limit {limit} is not between 1 and 200")));
        }
        let listed = TasksListed { subject_id: input.subject_id, limit: i64::from(limit) };
        let tasks = domain::call::<TasksList>(&listed)?;
        let tasks = tasks.into_iter().map(view).collect();
        Ok(Outcome::Succeeded(InspectOutput { tasks }))
    }
}

capstan_sdk::export_capability!(TaskInspect);
