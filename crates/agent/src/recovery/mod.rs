//! What happens after something went wrong and was written down as a
//! decision: a new one may get a bounded, read-only investigation by an
//! agent run (`investigateDecision`, when `agent.auto_investigate` is on),
//! and the option a human (or the system) chose is carried out by the
//! durable `resolveDecision` task, exactly once, and what it came to is
//! stored on the decision as `resolution.execution`. A recovery run's
//! outcome is checked from the facts by `verifyRecovery`.

mod investigate;
mod resolve;
mod verify;

use std::sync::Arc;

use crate::agent::AgentRuntime;
use crate::settings::Settings;
use crate::tasks::Worker;

pub use investigate::InvestigateDecision;
pub use resolve::{ResolveDecision, refusal};
pub use verify::VerifyRecovery;

/// Gives `worker` the handlers of this layer.
pub fn register(worker: &mut Worker, agent: &Arc<AgentRuntime>, settings: &Arc<Settings>) {
    let svc = agent.services();
    worker.handle(crate::domain::RESOLVE_DECISION, Arc::new(ResolveDecision(svc.clone())));
    let investigate = InvestigateDecision { agent: agent.clone(), settings: settings.clone() };
    worker.handle(crate::domain::INVESTIGATE_DECISION, Arc::new(investigate));
    let verify = VerifyRecovery { agent: agent.clone(), settings: settings.clone() };
    worker.handle(crate::domain::VERIFY_RECOVERY, Arc::new(verify));
}
