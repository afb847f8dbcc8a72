//! The worker loop: claims ready tasks of the kinds it has handlers for
//! (another process may run the others), runs each kind's handler while
//! renewing the lease, and records the outcome (fenced by the lease token)
//! with its audit event in one commit. A handler that loses its lease is
//! abandoned; the worker that took the task over finishes it. Told to
//! stop, a worker claims nothing more and gives the tasks it runs
//! [`DRAIN`] to finish; one still running then is cut off and left to its
//! lease, as if the process had died (another worker takes it over, and
//! its calls that had begun an effect are found orphaned and recorded
//! `unknown`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::{Task, TaskError, TaskStatus, Tasks};

/// Why an attempt failed, and so what happens to the task next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Another attempt may succeed (a service down, a store busy, a call
    /// whose outcome is unknown): queued again with backoff until its
    /// attempts run out.
    #[error("{0}")]
    Retry(String),
    /// No attempt can succeed (a payload that does not fit the kind, input
    /// a capability refuses): dead now, for a human to look at.
    #[error("{0}")]
    GiveUp(String),
}

/// Most failures are worth another attempt.
impl From<String> for HandlerError {
    fn from(message: String) -> HandlerError {
        HandlerError::Retry(message)
    }
}

/// A handler's result: output JSON, or why the attempt failed.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, HandlerError>> + Send>>;

/// Runs tasks of one kind.
pub trait TaskHandler: Send + Sync {
    fn run(&self, task: Task) -> HandlerFuture;
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long a stopping worker waits for the tasks it runs.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Worker settings.
#[derive(Debug, Clone, Copy)]
pub struct WorkerConfig {
    /// How long a claim lasts without renewal (about 30 s by default).
    pub lease: Duration,
    /// How often an idle worker looks for work.
    pub poll: Duration,
    /// Tasks run at once.
    pub concurrency: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig { lease: Duration::from_secs(30), poll: Duration::from_millis(250), concurrency: 2 }
    }
}

/// A worker process's loop.
pub struct Worker {
    tasks: Tasks,
    owner: String,
    handlers: HashMap<String, Arc<dyn TaskHandler>>,
    config: WorkerConfig,
}

impl Worker {
    pub fn new(tasks: Tasks, owner: String, config: WorkerConfig) -> Worker {
        Worker { tasks, owner, handlers: HashMap::new(), config }
    }

    /// Registers the handler for `kind`.
    pub fn handle(&mut self, kind: &str, handler: Arc<dyn TaskHandler>) {
        self.handlers.insert(kind.to_string(), handler);
    }

    /// Runs until `shutdown` resolves, then waits up to [`DRAIN`] for the
    /// tasks in progress; one still running after that is left to its lease.
    pub async fn run(self: Arc<Self>, shutdown: impl Future<Output = ()>) {
        let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        // Only what this worker can run: another process may know more kinds.
        let kinds: Vec<&str> = self.handlers.keys().map(String::as_str).collect();
        let mut running = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            // Finished tasks leave the set as they end, so it holds only
            // what is running.
            while running.try_join_next().is_some() {}
            let permit = tokio::select! {
                _ = &mut shutdown => break,
                permit = slots.clone().acquire_owned() => permit.expect("semaphore is never closed"),
            };
            match self.tasks.claim_among(&self.owner, self.config.lease, Some(&kinds)).await {
                Ok(Some(task)) => {
                    let worker = self.clone();
                    running.spawn(async move {
                        worker.process(task).await;
                        drop(permit);
                    });
                }
                Ok(None) => {
                    drop(permit);
                    tokio::select! {
                        _ = &mut shutdown => break,
                        _ = tokio::time::sleep(self.config.poll) => {}
                    }
                }
                Err(e) => {
                    drop(permit);
                    tracing::warn!(error = %e, "claiming a task failed");
                    tokio::time::sleep(self.config.poll).await;
                }
            }
        }
        if running.is_empty() {
            return;
        }
        tracing::info!(tasks = running.len(), "waiting for the tasks in progress before stopping");
        let drained = tokio::time::timeout(DRAIN, async { while running.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                tasks = running.len(),
                "tasks still running at shutdown are left to their leases; another worker takes them over"
            );
            running.shutdown().await;
        }
    }

    /// Runs one claimed task to an outcome.
    pub async fn process(&self, task: Task) {
        tracing::info!(task = %task.id, kind = %task.kind, attempt = task.attempts, "task started");
        let outcome = match self.handlers.get(&task.kind) {
            None => Err(HandlerError::GiveUp(format!("no handler for task kind {}", task.kind))),
            Some(handler) => {
                // The handler runs as its own task so renewals keep their
                // schedule however busy it is.
                let mut run = tokio::spawn(handler.run(task.clone()));
                // A task cut off at shutdown takes its handler with it.
                let _cut_together = AbortOnDrop(run.abort_handle());
                let renew_every = self.config.lease / 3;
                loop {
                    tokio::select! {
                        result = &mut run => break result.unwrap_or_else(|e| Err(format!("the handler failed: {e}").into())),
                        _ = tokio::time::sleep(renew_every) => {
                            if let Err(e) = self.tasks.renew(&task, self.config.lease).await {
                                // Returning drops `_cut_together`, which aborts the handler.
                                tracing::warn!(task = %task.id, error = %e, "lease lost; abandoning the task");
                                return;
                            }
                        }
                    }
                }
            }
        };
        // The outcome and its audit row commit together.
        let by = crate::principal::worker(&self.owner);
        let recorded = match &outcome {
            Ok(value) => self.tasks.succeed(&task, value, Some(&by)).await.map(|()| TaskStatus::Succeeded),
            Err(HandlerError::Retry(error)) => self.tasks.fail(&task, error, Some(&by)).await,
            Err(HandlerError::GiveUp(error)) => self.tasks.give_up(&task, error, Some(&by)).await,
        };
        let status = match recorded {
            Ok(status) => status,
            Err(TaskError::LeaseLost(_)) => {
                tracing::warn!(task = %task.id, "finished after losing the lease; the result is discarded");
                return;
            }
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not record the task outcome");
                return;
            }
        };
        tracing::info!(task = %task.id, status = status.as_str(), "task finished");
    }
}
