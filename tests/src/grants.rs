//! Automation grants the suites open: one action (or `*`), any scope, an
//! hour long, with daily budgets no test reaches.

use capstan::authz::NewGrant;
use capstan::pipeline::Services;

/// A grant for `action` lasting an hour.
pub fn for_an_hour(action: &str) -> NewGrant {
    NewGrant {
        action: action.into(),
        policy_name: None,
        policy_revision: None,
        policy_revision_id: None,
        scope: Default::default(),
        daily_invocations: 100,
        daily_bytes: 10_000_000,
        expires_at: capstan::store::now_ms() + 3_600_000,
        reason: None,
    }
}

/// Lets every automated caller execute anything for an hour.
pub async fn allow_everything(svc: &Services) {
    svc.authz.create_grant(&for_an_hour("*"), "admin:test").await.unwrap();
}
