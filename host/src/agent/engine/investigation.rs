//! Runs that investigate a decision: they run under bounds tighter than the
//! settings' (`RunLimits::within`), and when one ends — however it ends —
//! the decision it looked at, unless answered meanwhile, waits for a human
//! with what the run concluded (`evidence.agentInvestigation`). The model's
//! words are its conclusion, not a fact: nothing is resolved on them.

use serde_json::{Value, json};

use crate::agent::runs::{Run, RunStatus};
use crate::domain::{Domain, DomainError};

/// The longest conclusion kept on a decision.
const MAX_CONCLUSION_CHARS: usize = 2_000;

/// Hands the decision `run` investigated back to a human.
pub async fn ended(domain: &Domain, run: &Run, status: RunStatus, final_text: &str, calls: &Value) {
    let Some(investigation) = &run.investigation else { return };
    let conclusion: String = final_text.trim().chars().take(MAX_CONCLUSION_CHARS).collect();
    let evidence = json!({"agentInvestigation": {
        "conclusion": if conclusion.is_empty() { Value::Null } else { Value::from(conclusion) },
        "runId": run.id,
        "status": status.as_str(),
        "toolCalls": calls,
    }});
    match domain.advance_decision(&investigation.decision_id, "awaiting_user", &evidence).await {
        // Answered meanwhile: that answer stands.
        Ok(_) | Err(DomainError::Conflict(_)) => {}
        Err(e) => tracing::warn!(run = %run.id, error = %e, "could not hand an investigated decision back"),
    }
}
