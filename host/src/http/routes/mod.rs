//! Route handlers, one file per resource, and the audit record every
//! administrative change leaves.

pub mod acquisition;
pub mod agent;
pub mod approvals;
pub mod audit;
pub mod blocklist;
pub mod calendar;
pub mod capabilities;
pub mod decisions;
pub mod episodes;
pub mod events;
pub mod grants;
pub mod health;
pub mod library;
pub mod metrics;
pub mod notifications;
pub mod plugins;
pub mod policies;
pub mod session;
pub mod settings;
pub mod setup;
pub mod setup_mcp;
pub mod skills;
pub mod titles;

use crate::audit::NewAuditEntry;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;

/// Appends a change made through the API (a task cancelled, a grant
/// created, an approval decided, settings changed) to the audit chain.
pub(crate) async fn audit_change(
    state: &AppState,
    caller: &Caller,
    action: &str,
    subject: &str,
    outcome: &str,
    detail: Option<String>,
) -> Result<(), ApiError> {
    let actor_kind = match caller {
        Caller::Console(_) => "console-admin",
        Caller::Key(_) => "api-key",
    };
    let event = NewAuditEntry {
        actor_kind: actor_kind.into(),
        principal: caller.principal(),
        action: action.into(),
        subject: subject.into(),
        outcome: outcome.into(),
        detail,
        ..NewAuditEntry::default()
    };
    state.app.audit().append(&event).await?;
    Ok(())
}
