//! What the invoke path writes to the audit log and the event stream: one
//! `capability.invoke` row per call that ran (with a `capability.denied`
//! row for each import the sandbox refused), one `capability.denied` row
//! for a call refused before it ran (the rows' shape is `audit::calls`),
//! and the matching event for anything that is news. A write's ledger
//! finish, its audit rows and its event commit together, in the next group
//! commit (`store::batch`); a read's rows commit on their own, or go back
//! to an agent run to commit with its step (`ReadAudit::ByCaller`).

use serde_json::{Value, json};

use super::{Capabilities, Invocation, InvokeError, Origin, ReadAudit};
use crate::audit::{Audit, CallBy, NewAuditEntry, RowQueue, calls};
use crate::events::Events;
use crate::ledger::{Finish, finish_in};
use crate::runtime::{EffectClass, Loaded};

fn by(origin: &Origin) -> CallBy<'_> {
    CallBy { actor_kind: origin.actor_kind(), principal: &origin.principal }
}

/// One commit of the invoke path: a ledger finish, audit rows, an event.
struct Record {
    finish: Option<Finish>,
    rows: Vec<NewAuditEntry>,
    event: Option<(&'static str, String, Value)>,
}

/// The audit rows of a call that ran (or was answered from the ledger),
/// and its event when it is news.
fn invoke_record(
    origin: &Origin,
    loaded: &Loaded,
    inv: &Invocation,
    summary: &str,
    authorization_id: Option<String>,
    finish: Option<Finish>,
) -> Record {
    let id = loaded.descriptor.id.as_str();
    let mut rows = Vec::with_capacity(inv.denials.len() + 1);
    for denial in &inv.denials {
        let detail = Some(format!("{}: {}", denial.import, denial.reason));
        rows.push(calls::denied(by(origin), id, &inv.idempotency_key, None, detail));
    }
    let outcome =
        serde_json::to_value(inv.status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let error = inv.error.as_ref().map(|e| format!("{}: {}", e.kind, e.message));
    rows.push(calls::invoked(by(origin), id, &inv.idempotency_key, &outcome, summary, authorization_id, error));
    // Reads are too frequent and change nothing; everything else is news.
    let event = (loaded.descriptor.label > EffectClass::Preview).then(|| {
        let payload = json!({
            "capability": id,
            "status": inv.status,
            "invocationId": inv.invocation_id,
            "replayed": inv.replayed,
            "actorKind": origin.actor_kind(),
            "runId": origin.run_id,
        });
        ("capability.invoked", id.to_string(), payload)
    });
    Record { finish, rows, event }
}

impl Capabilities {
    /// Audits a call that ran (or was answered from the ledger), finishing
    /// its ledger row in the same commit when `finish` is given.
    pub(super) async fn audit_invoke(
        &self,
        origin: &Origin,
        loaded: &Loaded,
        inv: &Invocation,
        summary: &str,
        authorization_id: Option<String>,
        finish: Option<Finish>,
    ) -> Result<(), InvokeError> {
        self.record(invoke_record(origin, loaded, inv, summary, authorization_id, finish)).await
    }

    /// Audits a call that wrote nothing (a read, or a call refused with
    /// nothing claimed), or leaves its rows to the caller: with
    /// [`ReadAudit::ByCaller`], rows that would commit alone are handed
    /// back in [`Invocation::audit_rows`].
    pub(super) async fn audit_read(
        &self,
        origin: &Origin,
        loaded: &Loaded,
        mut inv: Invocation,
        summary: &str,
        read_audit: ReadAudit,
    ) -> Result<Invocation, InvokeError> {
        let record = invoke_record(origin, loaded, &inv, summary, None, None);
        if read_audit == ReadAudit::ByCaller && record.event.is_none() {
            inv.audit_rows = record.rows;
        } else {
            self.record(record).await?;
        }
        Ok(inv)
    }

    /// Audits a call refused before it ran.
    pub(super) async fn audit_denied(
        &self,
        origin: &Origin,
        id: &str,
        key: &str,
        summary: &str,
        inv: &Invocation,
    ) -> Result<(), InvokeError> {
        let reason = inv.error.as_ref().map(|e| e.message.clone());
        let row = calls::denied(by(origin), id, key, Some(summary), reason.clone());
        let payload = json!({
            "capability": id,
            "reason": reason,
            "actorKind": origin.actor_kind(),
            "runId": origin.run_id,
        });
        let event = Some(("capability.denied", id.to_string(), payload));
        self.record(Record { finish: None, rows: vec![row], event }).await
    }

    async fn record(&self, record: Record) -> Result<(), InvokeError> {
        // Rows that commit with nothing else are appended with other
        // callers' (a read's row: the most frequent).
        if record.finish.is_none() && record.event.is_none() {
            let queue = self.audit_rows.get_or_init(|| RowQueue::start(self.db.clone()));
            return Ok(queue.append(record.rows).await?);
        }
        let backend = self.db.backend;
        let record = std::sync::Arc::new(record);
        let announce = self
            .db
            .write(move |tx| {
                let record = record.clone();
                Box::pin(async move {
                    if let Some(finish) = &record.finish {
                        finish_in(tx, finish).await?;
                    }
                    Audit::append_all_in(tx, &record.rows).await?;
                    let mut announce = false;
                    if let Some((kind, subject, payload)) = &record.event {
                        Events::append_in(tx, backend, kind, Some(subject), payload).await?;
                        announce = true;
                    }
                    Ok::<_, InvokeError>(announce)
                })
            })
            .await?;
        if announce {
            self.events.announce();
        }
        Ok(())
    }
}
