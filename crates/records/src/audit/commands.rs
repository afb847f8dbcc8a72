//! The rows command starts and cancels leave in the audit log:
//! `command.start` and `command.cancel`, subject the configured command's
//! name, written before the process is spawned or signalled (the runtime
//! asks through [`CommandRecorder`]). The input summary holds counts only
//! (`args:N,env:N`): argument and environment values are never kept.

use futures_util::future::BoxFuture;

use super::{Audit, NewAuditEntry};
use crate::runtime::host::{CommandAct, CommandRecord, CommandRecorder};

/// The row of one command start or cancel.
pub(crate) fn command_row(record: &CommandRecord<'_>) -> NewAuditEntry {
    let (action, outcome) = match record.act {
        CommandAct::Start => ("command.start", "started"),
        CommandAct::Cancel => ("command.cancel", "cancelled"),
    };
    NewAuditEntry {
        actor_kind: record.actor_kind.into(),
        principal: record.principal.into(),
        action: action.into(),
        subject: record.command.into(),
        outcome: outcome.into(),
        idempotency_key: record.idempotency_key.map(str::to_string),
        input_summary: Some(format!("args:{},env:{}", record.arguments, record.env)),
        detail: Some(format!("handle {} for capability {}", record.handle, record.capability)),
        ..NewAuditEntry::default()
    }
}

impl CommandRecorder for Audit {
    fn record<'a>(&'a self, record: CommandRecord<'a>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.append(&command_row(&record)).await.map(|_| ()).map_err(|e| e.to_string()) })
    }
}
