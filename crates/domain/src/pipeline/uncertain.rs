//! A write whose outcome is open (`unknown`, or `running` for an owner that
//! is gone) is checked before the same thing is written again: by a later
//! request of the same caller with the same capability and canonical input,
//! by the replay of the row itself, or by a run going on after it stopped.
//! The check is the capability's read-only `verify`, called with the row's
//! own idempotency key (the key names the effect it looks for); what it
//! finds settles the row. When it cannot tell, a `safe` capability runs
//! the row again under its own key, and any other stays `unknown` and is
//! answered as such — nothing is written twice on a guess.

use std::time::Duration;

use serde_json::{Value, json};

use super::authorize::Authorization;
use super::{Capabilities, Invocation, InvokeError, Origin, recorded};
use crate::ledger::{LedgerStatus, Record};
use crate::runtime::{EffectClass, Grant, Loaded, Replay, VerifyOutcome};

/// What checking a write with an open outcome found.
#[derive(Debug)]
pub enum ReplayCheck {
    /// It was done: its result, now recorded `succeeded`.
    Done(Invocation),
    /// It was not done: the row is now `failed`, so it may run again.
    NotDone,
    /// Nobody can tell (no `verify`, or it could not say): still `unknown`.
    CannotTell { record: Record, reason: String },
    /// A live process is still running it.
    Busy(Record),
}

/// How long a later request waits for a live owner's identical write.
const BUSY_WAIT: Duration = Duration::from_secs(120);

impl Capabilities {
    /// Checks `record`, a write with an open outcome whose input was
    /// `input`, read-only, and settles it from what the check found.
    pub async fn check_open(
        &self,
        origin: &Origin,
        record: &Record,
        input: &Value,
    ) -> Result<ReplayCheck, InvokeError> {
        let Some(record) = self.ledger.take_over(record).await? else {
            return Ok(ReplayCheck::Busy(record.clone()));
        };
        let Some(loaded) = self.runtime.snapshot().get(&record.capability_id) else {
            let reason = format!("{} is not loaded, so nothing can check it", record.capability_id);
            return Ok(ReplayCheck::CannotTell { record, reason });
        };
        let grant = origin.grant(EffectClass::Read, Some(record.idempotency_key.clone()));
        self.verify_open(&loaded, input, grant, record).await
    }

    /// Asks `verify` about `record` (an `unknown` row) under `grant`, and
    /// settles the row from the answer.
    pub(super) async fn verify_open(
        &self,
        loaded: &Loaded,
        input: &Value,
        grant: Grant,
        record: Record,
    ) -> Result<ReplayCheck, InvokeError> {
        match self.runtime.verify(&loaded.descriptor.id, &input.to_string(), grant).await {
            Ok(VerifyOutcome::Done { output }) => {
                let text = output.to_string();
                self.ledger.settle_checked(&record, LedgerStatus::Succeeded, Some(&text), None).await?;
                let settled = Record { status: LedgerStatus::Succeeded, result: Some(text), ..record };
                Ok(ReplayCheck::Done(recorded(&settled.idempotency_key, &settled)))
            }
            Ok(VerifyOutcome::NotDone) => {
                let error = json!({"kind": "not-done", "message": "a read-only check found it was not carried out"});
                self.ledger.settle_checked(&record, LedgerStatus::Failed, None, Some(&error.to_string())).await?;
                Ok(ReplayCheck::NotDone)
            }
            Ok(VerifyOutcome::CannotTell { reason }) => Ok(ReplayCheck::CannotTell { record, reason }),
            Err(e) => Ok(ReplayCheck::CannotTell { record, reason: e.to_string() }),
        }
    }

    /// Before a fresh key is claimed for a write: the answer to give
    /// instead, when an earlier identical write of the same caller has an
    /// open outcome that the check did not find `not done`.
    pub(super) async fn earlier_open_write(
        &self,
        origin: &Origin,
        loaded: &Loaded,
        input: &Value,
        digest: &str,
        grant: &Grant,
        authorization: &Authorization,
    ) -> Result<Option<Invocation>, InvokeError> {
        let d = &loaded.descriptor;
        let key = grant.idempotency_key.clone().unwrap_or_default();
        let Some(earlier) = self.ledger.open_like(&origin.principal, &d.id, digest, &key).await? else {
            return Ok(None);
        };
        let mut checked = self.check_open(origin, &earlier, input).await?;
        if let ReplayCheck::Busy(running) = &checked {
            // A live process is writing the same thing now (or one that
            // died has not yet missed its heartbeat): wait for it, then
            // judge what it left.
            match self.ledger.await_unowned(&running.idempotency_key, BUSY_WAIT).await? {
                Some(left) if matches!(left.status, LedgerStatus::Running | LedgerStatus::Unknown) => {
                    checked = self.check_open(origin, &left, input).await?;
                }
                _ => return Ok(None),
            }
        }
        match checked {
            ReplayCheck::Done(inv) => Ok(Some(inv)),
            ReplayCheck::NotDone | ReplayCheck::Busy(_) => Ok(None),
            ReplayCheck::CannotTell { record, .. } if d.replay == Replay::Safe => {
                // Running it again is harmless by the capability's word:
                // settle the earlier row by running it under its own key.
                let token = self.ledger.reclaim_unknown(&record).await?;
                let grant = Grant { idempotency_key: Some(record.idempotency_key.clone()), ..grant.clone() };
                let key = &record.idempotency_key;
                let inv = self.run_claimed(loaded, input, grant, key, &record.id, &token, authorization).await?;
                Ok(Some(inv))
            }
            ReplayCheck::CannotTell { record, reason } => {
                let mut inv = recorded(&key, &record);
                inv.error = Some(super::CallError {
                    kind: "unknown".into(),
                    message: format!(
                        "an earlier identical write (invocation {}) has an unknown outcome; check before \
                         repeating it ({reason})",
                        record.id
                    ),
                });
                Ok(Some(inv))
            }
        }
    }
}
