//! What an MCP caller is told when a propose or execute call is denied
//! for want of authority: which grant would allow it and where a person
//! gives one — and, for a call acting on a plan (a capability tagged
//! `plan:<type>` called with a `planId`), the approval request that is
//! opened for that plan as it stands, which a console administrator sees
//! on the Approvals tab. A key's call never approves anything itself.

use serde_json::{Value, json};

use crate::pipeline::{Invocation, Services};
use crate::runtime::Descriptor;

/// What follows a denial: words for the caller, and `_meta` entries.
pub(crate) struct Next {
    pub said: String,
    pub meta: Vec<(&'static str, Value)>,
}

/// `None` unless `inv` was denied; otherwise what would allow the call,
/// with an approval requested where a plan is involved.
pub(crate) async fn next_step(
    svc: &Services,
    d: &Descriptor,
    input: &Value,
    by: &str,
    inv: &Invocation,
) -> Option<Next> {
    if inv.error.as_ref().is_none_or(|e| e.kind != "denied") {
        return None;
    }
    let grant = format!(
        "An administrator can allow it with an automation grant for {id} (the console's Automation grants tab, \
         or POST /api/v1/grants with action {id})",
        id = d.id
    );
    let plan_type = d.tags.iter().find_map(|t| t.strip_prefix("plan:"));
    let plan_id = input.get("planId").and_then(Value::as_str);
    let (Some(plan_type), Some(plan_id)) = (plan_type, plan_id) else {
        return Some(Next { said: format!("{grant}."), meta: Vec::new() });
    };
    match svc.authz.request_approval(&svc.domain, plan_type, plan_id, Some(&d.id), by).await {
        Ok(approval) if approval.status == crate::authz::ApprovalStatus::Pending => Some(Next {
            said: format!(
                "{grant}, or approve this {plan_type} plan: approval {} was requested and waits on the console's \
                 Approvals tab. Call again once it is approved; until then the call is refused the same way.",
                approval.id
            ),
            meta: vec![("capstan/approvalId", json!(approval.id)), ("capstan/approvalStatus", json!("pending"))],
        }),
        Ok(approval) => Some(Next {
            said: format!("{grant}. This plan's approval {} is already {}.", approval.id, approval.status),
            meta: vec![("capstan/approvalId", json!(approval.id)), ("capstan/approvalStatus", json!(approval.status))],
        }),
        // A plan that is gone or no longer open cannot be approved.
        Err(e) => Some(Next { said: format!("{grant}. No approval could be asked for: {e}."), meta: Vec::new() }),
    }
}
