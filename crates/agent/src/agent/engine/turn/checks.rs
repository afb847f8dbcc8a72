//! Before a run takes its next message: the writes of the run whose
//! outcome is open — a call an abort stopped mid-way, one a crash left
//! running — are checked read-only (the capability's `verify`, asked with
//! the row's own key) and settled from what it found. The model is told
//! beside the message, so it goes on from facts rather than repeating a
//! write blindly; the checks are an `agent.checked` event.

use serde_json::{Value, json};

use super::RunState;
use crate::agent::engine::EngineError;
use crate::agent::providers::Block;
use crate::agent::session_log::HOST_NOTE;
use crate::ledger::{LedgerError, Record};
use crate::pipeline::{ReplayCheck, input_digest};

impl RunState<'_> {
    /// Checks the run's writes whose outcome is open; the note for the
    /// model, when there were any.
    pub(super) async fn check_open_writes(&self) -> Result<Option<String>, EngineError> {
        let open = self.rt.svc.ledger.open_of_run(&self.run_id).await.map_err(LedgerError::from)?;
        if open.is_empty() {
            return Ok(None);
        }
        let origin = self.caller.origin("check");
        let mut lines = Vec::new();
        let mut checks = Vec::new();
        for record in &open {
            let what = format!("{} (invocation {})", record.capability_id, record.id);
            let (outcome, said) = match self.input_of(record) {
                None => ("unknown", "its input is no longer in the conversation, so it is checked when made again"),
                Some(input) => match self
                    .rt
                    .svc
                    .caps
                    .check_open(&origin, record, &input)
                    .await
                    .map_err(|source| EngineError::Invoke { capability: record.capability_id.clone(), source })?
                {
                    ReplayCheck::Done(_) => ("done", "a check found it carried out; its result is recorded"),
                    ReplayCheck::NotDone => ("not_done", "a check found it was not carried out; it may be made again"),
                    ReplayCheck::CannotTell { .. } => {
                        ("unknown", "nobody can tell whether it was carried out; check its effect before repeating it")
                    }
                    ReplayCheck::Busy(_) => ("running", "it is still running"),
                },
            };
            lines.push(format!("- {what}: {outcome} — {said}."));
            checks.push(json!({"invocationId": record.id, "capability": record.capability_id, "outcome": outcome}));
        }
        self.rt.runs.append_event(&self.run_id, "agent.checked", &json!({"checks": checks})).await?;
        Ok(Some(format!("{HOST_NOTE} writes of this run whose outcome was open:\n{}", lines.join("\n"))))
    }

    /// The input of the call `record` was made for, from the conversation.
    fn input_of(&self, record: &Record) -> Option<Value> {
        self.session.messages.iter().flat_map(|m| &m.content).find_map(|b| match b {
            Block::ToolUse { name, input, .. }
                if *name == record.capability_id && input_digest(input) == record.input_digest =>
            {
                Some(input.clone())
            }
            _ => None,
        })
    }
}
