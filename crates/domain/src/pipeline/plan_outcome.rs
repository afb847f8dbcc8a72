//! How a call acting on an acquisition plan ended, told to the domain
//! store whoever made it (the sweep, a person, an agent, a decision's
//! option): a failure that ran now is counted on the plan and asked about
//! (`domain::submit_failures`), a success clears what was counted. The
//! plan a call acts on is the one its `plan:acquisition` tag and `planId`
//! input name, as for its authorisation.

use serde_json::Value;

use super::authorize::plan_of;
use super::{Capabilities, Invocation};
use crate::runtime::{Descriptor, Status};

impl Capabilities {
    /// Tells the store how a call of `d` with `input` ended. A store that
    /// cannot be reached leaves the call's answer as it is: the next call
    /// tells it again.
    pub(super) async fn plan_outcome(&self, d: &Descriptor, input: &Value, inv: &Invocation) {
        let Some(("acquisition", plan_id)) = plan_of(d, input) else { return };
        let told = match inv.status {
            Status::Succeeded => self.domain.submit_succeeded(plan_id).await.map(drop),
            // A failure answered from the ledger was counted when it ran.
            Status::Failed if !inv.replayed => {
                let reason = match &inv.error {
                    Some(e) if !e.message.trim().is_empty() => e.message.clone(),
                    Some(e) => format!("{} ended {}", d.id, e.kind),
                    None => format!("{} failed", d.id),
                };
                self.domain.submit_failed(plan_id, &reason).await.map(drop)
            }
            _ => return,
        };
        if let Err(e) = told {
            tracing::warn!(plan = plan_id, capability = %d.id, error = %e, "could not record how a plan's call ended");
        }
    }
}
