//! Runs that investigate a decision: they run under bounds tighter than the
//! settings' (`RunLimits::within`), and when one ends — however it ends —
//! what the run concluded is added to the decision
//! (`evidence.agentInvestigation`). An investigation hands the decision
//! back to a human; a recovery run (by `system:auto-recover`) queues
//! `verifyRecovery`, which closes the decision only when the facts show the
//! recovery worked. The model's words are its conclusion, not a fact:
//! nothing is resolved on them.

use serde_json::{Value, json};

use crate::agent::runs::{Run, RunStatus};
use crate::domain::{Answer, Domain, DomainError, VERIFY_RECOVERY};
use crate::domain::{DecisionStatus, IdentityStatus};
use crate::tasks::{NewTask, Tasks};

/// Who starts recovery runs.
pub(crate) const RECOVER_BY: &str = "system:auto-recover";

/// The longest conclusion kept on a decision.
const MAX_CONCLUSION_CHARS: usize = 2_000;

/// Hands the decision `run` investigated back to a human.
pub async fn ended(domain: &Domain, tasks: &Tasks, run: &Run, status: RunStatus, final_text: &str, calls: &Value) {
    let Some(investigation) = &run.investigation else { return };
    let recovering = run.created_by == RECOVER_BY;
    let conclusion: String = final_text.trim().chars().take(MAX_CONCLUSION_CHARS).collect();
    let evidence = json!({"agentInvestigation": {
        "conclusion": if conclusion.is_empty() { Value::Null } else { Value::from(conclusion) },
        "runId": run.id,
        "status": status.as_str(),
        "toolCalls": calls,
    }});
    let next = if recovering { DecisionStatus::Investigating } else { DecisionStatus::AwaitingUser };
    let decision = match domain.advance_decision(&investigation.decision_id, next, &evidence).await {
        Ok(decision) => Some(decision),
        // Answered meanwhile: that answer stands.
        Err(DomainError::Conflict(_)) => None,
        Err(e) => {
            tracing::warn!(run = %run.id, error = %e, "could not hand an investigated decision back");
            None
        }
    };
    if let Some(decision) = decision.filter(|d| d.kind == "identity_ambiguous") {
        identity_settled(domain, run, &decision).await;
    }
    if recovering {
        let verify = NewTask {
            kind: VERIFY_RECOVERY.into(),
            subject: Some(investigation.decision_id.clone()),
            payload: json!({"decisionId": investigation.decision_id, "runId": run.id}),
            dedupe_key: Some(format!("verify:{}", investigation.decision_id)),
            max_attempts: 3,
            created_by: RECOVER_BY.into(),
        };
        if let Err(e) = tasks.enqueue(&verify).await {
            tracing::warn!(run = %run.id, error = %e, "could not queue the check of a recovery");
        }
    }
}

/// An ambiguous identity the run resolved (`identity.resolve` is among what
/// an investigation may call): the release's stored identity is the fact,
/// and a resolved one closes the decision for the run's creator.
async fn identity_settled(domain: &Domain, run: &Run, decision: &crate::domain::Decision) {
    let Some(release) = decision.subject.as_deref() else { return };
    let Ok(found) = domain.release(release).await else { return };
    if found.identity_status != IdentityStatus::Resolved {
        return;
    }
    let facts = json!({"release": release, "identityStatus": found.identity_status, "entityId": found.entity_id});
    let execution = json!({"kind": "agent_recover", "verified": true, "runId": run.id, "facts": facts});
    match domain.answer_decision(&decision.id, &Answer::Recovered { execution }, &run.created_by).await {
        Ok(_) | Err(DomainError::Conflict(_)) => {}
        Err(e) => tracing::warn!(run = %run.id, error = %e, "could not close a resolved identity's decision"),
    }
}
