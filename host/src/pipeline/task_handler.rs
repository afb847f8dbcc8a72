//! The `invokeCapability` task kind: a capability call run by the worker
//! through the one invoke path, as the task actor and in the task's
//! idempotency scope, so a retried attempt meets the ledger record of the
//! one before it.

use std::sync::Arc;

use serde::Deserialize;

use super::{Capabilities, Origin};
use crate::runtime::Status;
use crate::tasks::{Task, TaskHandler, worker::HandlerFuture};

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

impl TaskHandler for InvokeCapability {
    fn run(&self, task: Task) -> HandlerFuture {
        let caps = self.0.clone();
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| format!("payload does not fit {INVOKE_CAPABILITY}: {e}"))?;
            let origin = Origin::task(&task);
            let inv = caps.invoke(&origin, &payload.capability, &payload.input).await.map_err(|e| e.to_string())?;
            let value = serde_json::to_value(&inv).map_err(|e| e.to_string())?;
            match inv.status {
                Status::Succeeded | Status::Pending => Ok(value),
                Status::Failed | Status::Unknown => Err(inv
                    .error
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .unwrap_or_else(|| "the call's outcome is unknown".into())),
            }
        })
    }
}
