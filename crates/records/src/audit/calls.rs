//! The rows a capability call leaves in the audit log: `capability.invoke`
//! for a call that ran (or was answered from the ledger) and
//! `capability.denied` for a call refused before it ran or an import the
//! sandbox refused while it ran. The invoke path writes them in the same
//! transaction as its events; their shape is said here.

use super::NewAuditEntry;

/// Who made a call, as its rows record it.
#[derive(Debug, Clone, Copy)]
pub struct CallBy<'a> {
    /// `console-admin`, `api-key`, `agent`, `subagent`, `task`, `cli`.
    pub actor_kind: &'a str,
    pub principal: &'a str,
}

/// A call of `capability` under idempotency key `key` that ended `outcome`.
pub fn invoked(
    by: CallBy<'_>,
    capability: &str,
    key: &str,
    outcome: &str,
    input_summary: &str,
    authorization_id: Option<String>,
    error: Option<String>,
) -> NewAuditEntry {
    NewAuditEntry {
        actor_kind: by.actor_kind.into(),
        principal: by.principal.into(),
        action: "capability.invoke".into(),
        subject: capability.into(),
        outcome: outcome.into(),
        authorization_id,
        idempotency_key: Some(key.into()),
        input_summary: Some(input_summary.into()),
        detail: error,
    }
}

/// A refusal of a call of `capability`, or of one of its imports, and why.
pub fn denied(
    by: CallBy<'_>,
    capability: &str,
    key: &str,
    input_summary: Option<&str>,
    reason: Option<String>,
) -> NewAuditEntry {
    NewAuditEntry {
        actor_kind: by.actor_kind.into(),
        principal: by.principal.into(),
        action: "capability.denied".into(),
        subject: capability.into(),
        outcome: "denied".into(),
        idempotency_key: Some(key.into()),
        input_summary: input_summary.map(str::to_string),
        detail: reason,
        ..NewAuditEntry::default()
    }
}
