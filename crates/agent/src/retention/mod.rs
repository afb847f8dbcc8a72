//! What the host keeps, and for how long. The `pruneData` task — queued
//! every hour by `capstan serve`, one at a time — removes the receipts of
//! calls made outside any agent run (a task's, an API request's) once they
//! are older than `data.retention_days`, and archives of command output
//! last written before then; `data.cleanup_enabled = false` or a
//! retention of 0 keeps them for ever. It also finishes deletions: a run
//! deleted while some of its writes had an open outcome goes once they are
//! settled, and a session log whose run is gone is removed. Never removed
//! by time: receipts `running` or `unknown` (nothing may forget a write
//! whose outcome is open), and the audit log (its hash chain must verify).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::AgentRuntime;
use crate::settings::Settings;
use crate::tasks::{HandlerError, HandlerFuture, NewTask, Task, TaskHandler, Tasks, Worker};

/// The task kind.
pub const PRUNE_DATA: &str = "pruneData";

/// How often `capstan serve` queues it.
pub(crate) const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How old a receipt outside any run may grow, or `None` when nothing is
/// pruned by time (cleanup off, or a retention of 0 days).
pub async fn retention(settings: &Settings) -> Result<Option<Duration>, String> {
    let enabled = settings.get("data.cleanup_enabled").await.map_err(|e| e.to_string())?;
    let days = settings.get("data.retention_days").await.map_err(|e| e.to_string())?;
    let days = days.as_u64().unwrap_or(0);
    Ok((enabled != Value::Bool(false) && days > 0).then(|| Duration::from_secs(days * 86_400)))
}

struct PruneData {
    agent: Arc<AgentRuntime>,
    settings: Arc<Settings>,
}

impl TaskHandler for PruneData {
    fn run(&self, _task: Task) -> HandlerFuture {
        let (agent, settings) = (self.agent.clone(), self.settings.clone());
        Box::pin(async move {
            let runs = agent.finish_deletions().await.map_err(|e| HandlerError::Retry(e.to_string()))?;
            let Some(age) = retention(&settings).await.map_err(HandlerError::Retry)? else {
                return Ok(json!({"runsRemoved": runs, "receiptsRemoved": 0, "pruning": "off"}));
            };
            let receipts = agent.services().ledger.prune(age).await.map_err(|e| e.to_string())?;
            let archives = agent.capabilities().runtime().prune_command_output(age).await;
            if receipts > 0 || runs > 0 || archives > 0 {
                tracing::info!(receipts, runs, archives, "pruned old receipts, command output and deleted runs");
            }
            Ok(json!({"runsRemoved": runs, "receiptsRemoved": receipts, "commandOutputRemoved": archives,
                "retentionDays": age.as_secs() / 86_400}))
        })
    }
}

/// Gives `worker` the `pruneData` handler.
pub fn register(worker: &mut Worker, agent: &Arc<AgentRuntime>, settings: &Arc<Settings>) {
    worker.handle(PRUNE_DATA, Arc::new(PruneData { agent: agent.clone(), settings: settings.clone() }));
}

/// Queues `pruneData` every [`PRUNE_EVERY`] until `stop` is cancelled
/// (one at a time: the dedupe key holds while one is queued or running).
pub async fn schedule(tasks: Tasks, stop: CancellationToken) {
    loop {
        let task = NewTask {
            kind: PRUNE_DATA.into(),
            subject: None,
            payload: json!({}),
            dedupe_key: Some(PRUNE_DATA.into()),
            max_attempts: 3,
            created_by: "retention".into(),
        };
        // Every node keeps this schedule; one that finds another's turn
        // recent skips its own.
        let recent = match tasks.queued_within(PRUNE_DATA, PRUNE_EVERY.mul_f64(0.9)).await {
            Ok(recent) => recent,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read when pruneData last ran; queued anyway");
                false
            }
        };
        if !recent && let Err(e) = tasks.enqueue(&task).await {
            tracing::warn!(error = %e, "cannot queue pruneData");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(PRUNE_EVERY) => {}
        }
    }
}
