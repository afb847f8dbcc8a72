//! What is happening to a wanted slot, for the Library to show: the
//! download of the plan submitted for it (the client's status, progress,
//! state, speed, seeds and ETA), or the plan drafted for it that waits for
//! someone to approve it — or to look at why handing it to the client
//! failed (`submitFailure`, with the decision that asks); and the files it
//! holds below its profile's cutoff (`upgrade`). Reads only.

use capstan_contract::ops::queries::{DownloadActivity, SlotActivity, SubmitFailure, WaitingPlan};
use serde_json::Value;

use super::{Domain, DomainError, PlanStatus, Slot, SlotStatus};

impl Domain {
    /// `slot` as the Library shows it: the slot itself, with `download`
    /// while a submitted plan's download is followed, and `waitingPlan`
    /// while a drafted plan waits for an approval.
    pub async fn slot_with_activity(&self, slot: &Slot) -> Result<SlotActivity, DomainError> {
        let mut shown =
            SlotActivity { slot: slot.clone(), download: None, waiting_plan: None, episodes: None, upgrade: None };
        if slot.profile.is_some() && matches!(slot.status, SlotStatus::Wanted | SlotStatus::Satisfied) {
            shown.upgrade = self.upgrade_wanted(slot).await?;
        }
        match slot.status {
            SlotStatus::Reserved => {
                let submitted = self.plans(Some(PlanStatus::Submitted), Some(&slot.id), 1).await?;
                if let Some(plan) = submitted.first()
                    && let Some(d) = self.download_for_plan(&plan.id).await?
                {
                    shown.download = Some(DownloadActivity {
                        id: d.id,
                        plan_id: plan.id.clone(),
                        status: d.status,
                        progress: d.progress,
                        client_state: d.client_state,
                        download_speed: d.download_speed,
                        seeds: d.seeds,
                        eta_seconds: d.eta_seconds,
                        updated_at: d.updated_at,
                    });
                }
            }
            SlotStatus::Wanted => {
                // The sweep drafts a plan and stops when nothing lets it
                // submit on its own: someone has to approve it.
                let drafts = self.plans(Some(PlanStatus::Draft), Some(&slot.id), 1).await?;
                if let Some(plan) = drafts.first() {
                    let submit_failure = if plan.submit_failures > 0 {
                        let decision = self.undecided_of_root(&super::submit_failures::root(&plan.id)).await?;
                        Some(SubmitFailure {
                            reason: plan.last_failure.clone(),
                            failures: plan.submit_failures,
                            failing_since: plan.failing_since,
                            retry_at: plan.retry_at,
                            decision_id: decision.map(|d| d.id),
                        })
                    } else {
                        None
                    };
                    shown.waiting_plan = Some(WaitingPlan {
                        id: plan.id.clone(),
                        title: plan.payload.get("title").and_then(Value::as_str).map(str::to_string),
                        created_at: plan.created_at,
                        submit_failure,
                    });
                }
            }
            _ => {}
        }
        Ok(shown)
    }
}
