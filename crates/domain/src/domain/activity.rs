//! What is happening to a wanted slot, for the Library to show: the
//! download of the plan submitted for it (the client's status, progress,
//! state, speed, seeds and ETA), or the plan drafted for it that waits for
//! someone to approve it — or to look at why handing it to the client
//! failed (`submitFailure`, with the decision that asks). Reads only.

use serde_json::{Value, json};

use super::{Domain, DomainError, PlanStatus, Slot, SlotStatus};

impl Domain {
    /// `slot` as the Library shows it: the slot itself, with `download`
    /// while a submitted plan's download is followed, and `waitingPlan`
    /// while a drafted plan waits for an approval.
    pub async fn slot_with_activity(&self, slot: &Slot) -> Result<Value, DomainError> {
        let mut shown = serde_json::to_value(slot).map_err(|e| DomainError::Invalid(e.to_string()))?;
        match slot.status {
            SlotStatus::Reserved => {
                let submitted = self.plans(Some(PlanStatus::Submitted), Some(&slot.id), 1).await?;
                if let Some(plan) = submitted.first()
                    && let Some(d) = self.download_for_plan(&plan.id).await?
                {
                    shown["download"] = json!({
                        "id": d.id,
                        "planId": plan.id,
                        "status": d.status,
                        "progress": d.progress,
                        "clientState": d.client_state,
                        "downloadSpeed": d.download_speed,
                        "seeds": d.seeds,
                        "etaSeconds": d.eta_seconds,
                        "updatedAt": d.updated_at,
                    });
                }
            }
            SlotStatus::Wanted => {
                // The sweep drafts a plan and stops when nothing lets it
                // submit on its own: someone has to approve it.
                let drafts = self.plans(Some(PlanStatus::Draft), Some(&slot.id), 1).await?;
                if let Some(plan) = drafts.first() {
                    shown["waitingPlan"] = json!({
                        "id": plan.id,
                        "title": plan.payload.get("title"),
                        "createdAt": plan.created_at,
                    });
                    if plan.submit_failures > 0 {
                        let decision = self.undecided_of_root(&super::submit_failures::root(&plan.id)).await?;
                        shown["waitingPlan"]["submitFailure"] = json!({
                            "reason": plan.last_failure,
                            "failures": plan.submit_failures,
                            "failingSince": plan.failing_since,
                            "retryAt": plan.retry_at,
                            "decisionId": decision.map(|d| d.id),
                        });
                    }
                }
            }
            _ => {}
        }
        Ok(shown)
    }
}
