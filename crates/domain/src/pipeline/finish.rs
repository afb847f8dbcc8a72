//! The end of a call that may write: running a claimed call and keeping
//! how it ended for the ledger, and the one commit that finishes its ledger
//! row and audits it together.

use serde_json::Value;

use super::authorize::Authorization;
use super::{CallError, Capabilities, Invocation, InvokeError, Loaded, Origin, failed};
use crate::ledger::{Finish, LedgerStatus, Record};
use crate::runtime::{CallOutcome, CallReport, Grant, Status};

impl Capabilities {
    /// The end of every authorised write: the call's ledger finish (when it
    /// ran now) and its audit rows commit together; a success answered
    /// without running anything now (an earlier identical write found done)
    /// uses up the approval it was authorised by, and a call that ran and
    /// did not succeed gives back the approval it took (`run_claimed`).
    pub(super) async fn answered(
        &self,
        origin: &Origin,
        loaded: &Loaded,
        mut inv: Invocation,
        summary: &str,
        authorization: &Authorization,
    ) -> Result<Invocation, InvokeError> {
        let finish = inv.finish.take();
        let approval = match authorization {
            Authorization::Approval(approval) => Some(approval),
            _ => None,
        };
        if let (Some(approval), None, Status::Succeeded, Some(row)) =
            (approval, &finish, inv.status, &inv.invocation_id)
        {
            self.authz.take_approval(&approval.id, row).await?;
        }
        let given_back = finish.as_ref().filter(|f| f.status != LedgerStatus::Succeeded).map(|f| f.id.clone());
        self.audit_invoke(origin, loaded, &inv, summary, authorization.id(), finish).await?;
        if let (Some(approval), Some(row)) = (approval, given_back) {
            self.authz.give_back_approval(&approval.id, &row).await?;
        }
        Ok(inv)
    }

    /// Runs a claimed call; how it ended is kept in the invocation for
    /// [`Capabilities::answered`] to write with its token. An approval
    /// authorising it is taken first, in one conditional update: a revoke
    /// (or another call) that got there before leaves this call denied
    /// without running, and one that comes after finds it used. A call that
    /// does not succeed gives it back when it is answered, so an approval
    /// is consumed by the first success only.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_claimed(
        &self,
        loaded: &Loaded,
        input: &Value,
        grant: Grant,
        key: &str,
        row: &str,
        token: &str,
        authorization: &Authorization,
    ) -> Result<Invocation, InvokeError> {
        let finish = |inv: &Invocation, effect_started: bool| {
            let (result, error) = ledger_payload(inv);
            let status = ledger_status(inv.status);
            Finish { id: row.to_string(), token: token.to_string(), status, result, error, effect_started }
        };
        if let Authorization::Approval(approval) = authorization
            && !self.authz.take_approval(&approval.id, row).await?
        {
            let message = format!("approval {} was revoked or used before this call could run", approval.id);
            let mut inv = Invocation { invocation_id: Some(row.to_string()), ..failed(key, "denied", message) };
            inv.finish = Some(finish(&inv, false));
            return Ok(inv);
        }
        let report = self.call(loaded, input, grant).await;
        let mut inv = invocation_from(key, Some(row.to_string()), &report);
        inv.finish = Some(finish(&inv, report.effect_started));
        Ok(inv)
    }
}

pub(super) fn ledger_status(status: Status) -> LedgerStatus {
    match status {
        Status::Succeeded => LedgerStatus::Succeeded,
        Status::Failed => LedgerStatus::Failed,
        Status::Pending => LedgerStatus::Pending,
        Status::Unknown => LedgerStatus::Unknown,
    }
}

pub(super) fn ledger_payload(inv: &Invocation) -> (Option<String>, Option<String>) {
    (inv.output.as_ref().map(Value::to_string), inv.error.as_ref().and_then(|e| serde_json::to_string(e).ok()))
}

/// Builds the invocation for a call that just ran.
pub(super) fn invocation_from(key: &str, row: Option<String>, report: &CallReport) -> Invocation {
    let (output, error) = match &report.outcome {
        // A command that did not end well: the output stays, and why it
        // is no success is the error.
        CallOutcome::Succeeded { output } if report.status() != Status::Succeeded => {
            let message = report.command.and_then(|end| end.failure()).unwrap_or_default();
            (Some(output.clone()), Some(CallError { kind: "command".into(), message }))
        }
        CallOutcome::Succeeded { output } | CallOutcome::Pending { output } => (Some(output.clone()), None),
        CallOutcome::Failed { failure } => {
            (None, Some(CallError { kind: failure.kind.clone(), message: failure.message.clone() }))
        }
        CallOutcome::Trapped { trap, message } => {
            let kind = serde_json::to_value(trap).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            (None, Some(CallError { kind, message: message.clone() }))
        }
    };
    Invocation {
        invocation_id: row,
        status: report.status(),
        output,
        error,
        replayed: false,
        idempotency_key: key.to_string(),
        denials: report.denials.clone(),
        finish: None,
        audit_rows: Vec::new(),
    }
}

/// Builds the invocation for a result recorded earlier.
pub(super) fn recorded(key: &str, record: &Record) -> Invocation {
    let status = match record.status {
        LedgerStatus::Succeeded => Status::Succeeded,
        LedgerStatus::Pending => Status::Pending,
        LedgerStatus::Failed => Status::Failed,
        LedgerStatus::Unknown | LedgerStatus::Running => Status::Unknown,
    };
    Invocation {
        invocation_id: Some(record.id.clone()),
        status,
        output: record.result.as_deref().and_then(|r| serde_json::from_str(r).ok()),
        error: record
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<CallErrorIn>(e).ok())
            .map(|e| CallError { kind: e.kind, message: e.message }),
        replayed: true,
        idempotency_key: key.to_string(),
        denials: Vec::new(),
        finish: None,
        audit_rows: Vec::new(),
    }
}

#[derive(serde::Deserialize)]
struct CallErrorIn {
    kind: String,
    message: String,
}
