//! A write refused for want of authority asks a human. When the agent's
//! execute call on a plan (a capability tagged `plan:<type>`, with the
//! input's `planId`) is denied, the run requests an approval of that plan
//! as it stands, remembers that it waits on it, and tells the model so. A
//! human's approval sends the run a message and it goes on
//! ([`AgentRuntime::approval_decided`](crate::agent::AgentRuntime::approval_decided));
//! the approval authorizes that plan only, once.

use serde_json::{Value, json};

use super::RunState;
use crate::agent::engine::toolbox::{Answered, ToolStatus};
use crate::agent::providers::Block;
use crate::runtime::{Actor, Mode};

impl RunState<'_> {
    /// `answered` as the model sees it, with the approval asked for when
    /// the call was a plan's execution refused for want of authority.
    pub(super) async fn ask_for_approval(&self, name: &str, input: &Value, mut answered: Answered) -> Answered {
        if answered.status != ToolStatus::Denied
            || self.caller.actor != Actor::Agent
            || self.caller.mode != Mode::Execute
        {
            return answered;
        }
        let snapshot = self.rt.svc.caps.runtime().snapshot();
        let Some(loaded) = snapshot.get(name) else { return answered };
        let Some(plan_type) = loaded.descriptor.tags.iter().find_map(|t| t.strip_prefix("plan:")) else {
            return answered;
        };
        let Some(plan_id) = input.get("planId").and_then(Value::as_str) else { return answered };
        let by = crate::principal::agent(&self.run_id);
        let approval =
            match self.rt.svc.authz.request_approval(&self.rt.svc.domain, plan_type, plan_id, Some(name), &by).await {
                Ok(approval) => approval,
                Err(e) => {
                    // A plan that cannot be approved (gone, no longer open) stays a plain denial.
                    tracing::info!(run = %self.run_id, plan = %plan_id, error = %e, "no approval asked for");
                    return answered;
                }
            };
        if let Err(e) = self.rt.runs.watch_approval(&self.run_id, &approval.id).await {
            tracing::warn!(run = %self.run_id, approval = %approval.id, error = %e, "cannot wait on an approval");
            return answered;
        }
        tracing::info!(run = %self.run_id, approval = %approval.id, plan = %plan_id, "asked a human to approve");
        if let Block::ToolResult { content, .. } = &mut answered.block {
            let mut told: Value = serde_json::from_str(content).unwrap_or_else(|_| json!({"status": "denied"}));
            told["approval"] = json!({"id": approval.id, "status": approval.status});
            told["note"] = Value::from(if approval.status == crate::authz::ApprovalStatus::Pending {
                "A human has been asked to approve this plan; the run is told when they do. Do not retry before then."
            } else {
                "This plan's approval is already given; the call was refused for another reason (see error)."
            });
            *content = told.to_string();
        }
        answered
    }
}
