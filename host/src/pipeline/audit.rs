//! What the invoke path writes to the audit log and the event stream: one
//! `capability.invoke` row per call that ran (with a `capability.denied`
//! row for each import the sandbox refused), one `capability.denied` row
//! for a call refused before it ran (the rows' shape is `audit::calls`),
//! and the matching event for anything that is news. Audit rows and events
//! commit in one write.

use serde_json::json;

use super::{Capabilities, Invocation, Origin};
use crate::audit::{Audit, CallBy, calls};
use crate::events::Events;
use crate::runtime::{EffectClass, Loaded};

fn by(origin: &Origin) -> CallBy<'_> {
    CallBy { actor_kind: origin.actor_kind(), principal: &origin.principal }
}

impl Capabilities {
    /// Audits a call that ran (or was answered from the ledger).
    pub(super) async fn audit_invoke(
        &self,
        origin: &Origin,
        loaded: &Loaded,
        inv: &Invocation,
        summary: &str,
        authorization_id: Option<String>,
    ) -> Result<(), sqlx::Error> {
        let id = loaded.descriptor.id.as_str();
        let mut tx = self.db.begin_write().await?;
        for denial in &inv.denials {
            let detail = Some(format!("{}: {}", denial.import, denial.reason));
            Audit::append_in(&mut tx, &calls::denied(by(origin), id, &inv.idempotency_key, None, detail)).await?;
        }
        let outcome =
            serde_json::to_value(inv.status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let error = inv.error.as_ref().map(|e| format!("{}: {}", e.kind, e.message));
        let invoked = calls::invoked(by(origin), id, &inv.idempotency_key, &outcome, summary, authorization_id, error);
        Audit::append_in(&mut tx, &invoked).await?;
        // Reads are too frequent and change nothing; everything else is news.
        let mut seq = None;
        if loaded.descriptor.label > EffectClass::Preview {
            let payload = json!({
                "capability": id,
                "status": inv.status,
                "invocationId": inv.invocation_id,
                "replayed": inv.replayed,
                "actorKind": origin.actor_kind(),
                "runId": origin.run_id,
            });
            seq = Some(Events::append_in(&mut tx, self.db.backend, "capability.invoked", Some(id), &payload).await?);
        }
        tx.commit().await?;
        if let Some(seq) = seq {
            self.events.announce(seq);
        }
        Ok(())
    }

    /// Audits a call refused before it ran.
    pub(super) async fn audit_denied(
        &self,
        origin: &Origin,
        id: &str,
        key: &str,
        summary: &str,
        inv: &Invocation,
    ) -> Result<(), sqlx::Error> {
        let reason = inv.error.as_ref().map(|e| e.message.clone());
        let mut tx = self.db.begin_write().await?;
        Audit::append_in(&mut tx, &calls::denied(by(origin), id, key, Some(summary), reason.clone())).await?;
        let payload = json!({
            "capability": id,
            "reason": reason,
            "actorKind": origin.actor_kind(),
            "runId": origin.run_id,
        });
        let seq = Events::append_in(&mut tx, self.db.backend, "capability.denied", Some(id), &payload).await?;
        tx.commit().await?;
        self.events.announce(seq);
        Ok(())
    }
}
