//! The `invokeCapability` task kind: a capability call run by the worker
//! through the one invoke path, as the task actor and in the task's
//! idempotency scope, so a retried attempt meets the ledger record of the
//! one before it.

use std::sync::Arc;

use serde::Deserialize;

use super::{Capabilities, Invocation, Origin};
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

/// The task kind name.
pub const INVOKE_CAPABILITY: &str = "invokeCapability";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    capability: String,
    input: serde_json::Value,
}

/// Runs `invokeCapability` tasks.
pub struct InvokeCapability(pub Arc<Capabilities>);

/// The attempt error of a call `id` that did not succeed: input the
/// capability refused will be refused again, so the task gives up; any
/// other failure (a service down, an unknown outcome the ledger will settle)
/// is worth another attempt.
pub fn failed_attempt(id: &str, inv: &Invocation) -> HandlerError {
    match &inv.error {
        Some(e) if e.kind == "invalid-input" => HandlerError::GiveUp(format!("{id} {}: {}", e.kind, e.message)),
        Some(e) => HandlerError::Retry(format!("{id} {}: {}", e.kind, e.message)),
        None => HandlerError::Retry(format!("{id} ended {:?}", inv.status)),
    }
}

/// Stops the commands of an owner when dropped.
struct StopCommandsOf(Arc<Capabilities>, String);

impl Drop for StopCommandsOf {
    fn drop(&mut self) {
        self.0.runtime().stop_commands_of(&self.1);
    }
}

impl TaskHandler for InvokeCapability {
    fn run(&self, task: Task) -> HandlerFuture {
        let caps = self.0.clone();
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit {INVOKE_CAPABILITY}: {e}")))?;
            let origin = Origin::task(&task);
            // Nothing the task started outlives it: not when it ends, and
            // not when its worker drops it (cancelled, its lease lost).
            let _stop = StopCommandsOf(caps.clone(), crate::runtime::task_owner(&task.id));
            let inv = caps.invoke(&origin, &payload.capability, &payload.input).await.map_err(|e| e.to_string())?;
            match inv.status {
                Status::Succeeded | Status::Pending => Ok(serde_json::to_value(&inv).map_err(|e| e.to_string())?),
                Status::Failed | Status::Unknown => Err(failed_attempt(&payload.capability, &inv)),
            }
        })
    }
}
