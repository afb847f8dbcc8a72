//! What happens after something went wrong and was written down as a
//! decision: the option a human (or the system) chose is carried out by the
//! durable `resolveDecision` task, exactly once, and what it came to is
//! stored on the decision as `resolution.execution`.

mod resolve;

use std::sync::Arc;

use crate::pipeline::Capabilities;
use crate::tasks::Worker;

pub use resolve::ResolveDecision;

/// Gives `worker` the handlers of this layer.
pub fn register(worker: &mut Worker, caps: &Arc<Capabilities>) {
    worker.handle(crate::domain::RESOLVE_DECISION, Arc::new(ResolveDecision(caps.clone())));
}
