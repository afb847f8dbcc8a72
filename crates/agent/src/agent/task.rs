//! The `runAgent` task: drives one run on a worker. The task's lease makes
//! one worker at a time own the run; when a worker dies, another takes the
//! task over after the lease lapses and resumes from the session log. When
//! the last attempt fails, the run ends `failed` with the error.

use std::sync::Arc;

use serde_json::Value;

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

/// Registers `runAgent` on `worker`, and starts the waker that queues the
/// task of each waiting run when its next look is due. Must be called
/// inside a tokio runtime.
pub fn register(worker: &mut Worker, runtime: &Arc<AgentRuntime>) {
    worker.handle(RUN_AGENT, Arc::new(RunAgent(runtime.clone())));
    let waker = Arc::downgrade(runtime);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let Some(runtime) = waker.upgrade() else { return };
            if let Err(e) = runtime.wake_due().await {
                tracing::warn!(error = %e, "could not wake waiting agent runs");
            }
        }
    });
}
