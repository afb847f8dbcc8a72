//! The runtime's component changes — loads, removals, held replacements,
//! refusals — written to the audit log as the host's own events: in the
//! background as the directory watcher sees them, and on demand before a
//! short-lived process exits.

use std::sync::Arc;

use super::{Audit, NewAuditEntry};
use crate::background::Background;
use crate::runtime::Runtime;

/// Writes one runtime's component changes to the audit log.
#[derive(Clone)]
pub struct ComponentAudit {
    runtime: Arc<Runtime>,
    audit: Audit,
    /// Serialises draining, so a flush also waits for a drain under way.
    lock: Arc<tokio::sync::Mutex<()>>,
    /// The writer that follows the runtime.
    background: Background,
}

impl ComponentAudit {
    /// Starts writing `runtime`'s component changes to `audit` as they
    /// come. Must be called inside a tokio runtime.
    pub fn start(runtime: Arc<Runtime>, audit: Audit) -> ComponentAudit {
        let background = Background::default();
        let writer = ComponentAudit { runtime, audit, lock: Arc::new(tokio::sync::Mutex::new(())), background };
        let follower = writer.clone();
        writer.background.spawn(async move {
            loop {
                follower.runtime.component_events_changed().await;
                if let Err(e) = follower.flush().await {
                    tracing::error!(error = %e, "could not audit a component change");
                }
            }
        });
        writer
    }

    /// Stops following the runtime, then writes what is left: nothing the
    /// runtime saw before the process stops goes unaudited.
    pub async fn close(&self) {
        self.background.close().await;
        if let Err(e) = self.flush().await {
            tracing::error!(error = %e, "could not audit the last component changes");
        }
    }

    /// Writes the changes waiting in the runtime now.
    pub async fn flush(&self) -> Result<(), sqlx::Error> {
        let _drain = self.lock.lock().await;
        for event in self.runtime.take_component_events() {
            let new = NewAuditEntry {
                actor_kind: "host".into(),
                principal: "host".into(),
                action: event.action.into(),
                outcome: event.action.trim_start_matches("component.").to_string(),
                subject: event.subject,
                detail: Some(event.detail),
                ..NewAuditEntry::default()
            };
            self.audit.append(&new).await?;
        }
        Ok(())
    }
}
