//! The `runAgent` task: drives one run on a worker. The task's lease makes
//! one worker at a time own the run; when a worker dies, another takes the
//! task over after the lease lapses and resumes from the session log. When
//! the last attempt fails, the run ends `failed` with the error.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::engine::{AgentRuntime, RUN_AGENT};
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler, Worker};

struct RunAgent(Arc<AgentRuntime>);

impl TaskHandler for RunAgent {
    fn run(&self, task: Task) -> HandlerFuture {
        let runtime = self.0.clone();
        Box::pin(async move {
            let run_id = task
                .payload
                .get("runId")
                .and_then(Value::as_str)
                .ok_or_else(|| HandlerError::GiveUp("the runAgent payload has no runId".into()))?
                .to_string();
            let outcome = runtime.drive(&run_id).await;
            if let Err(error) = &outcome
                && task.attempts >= task.max_attempts
            {
                // The last attempt: the run must not stay `running` forever.
                runtime.give_up(&run_id, &error.to_string()).await;
            }
            Ok(outcome?)
        })
    }
}

/// Registers `runAgent` on `worker`.
pub fn register(worker: &mut Worker, runtime: &Arc<AgentRuntime>) {
    worker.handle(RUN_AGENT, Arc::new(RunAgent(runtime.clone())));
}

/// Queues the task of each waiting run when its next look is due,
/// checking every second, until `stop` is cancelled.
pub async fn wake_due_runs(runtime: Arc<AgentRuntime>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
        if let Err(e) = runtime.wake_due().await {
            tracing::warn!(error = %e, "could not wake waiting agent runs");
        }
    }
}
