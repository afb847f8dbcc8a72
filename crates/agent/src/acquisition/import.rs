//! `verifyAndImport {downloadTaskId}`: `organize.plan` freezes where each
//! file goes, `organize.execute` places them — or, when the plan replaces
//! files the library holds (an upgrade), `organize.replace` places them and
//! keeps the old ones in the recycle folder, as a `replacement` plan.
//! Without an approval or a grant for the execution the organization stays
//! planned, a human is asked to approve it (it shows among the console's
//! approvals), and the task ends saying so without calling, so no refusal
//! is left behind; the approval queues the task again.

use serde::Deserialize;
use serde_json::{Value, json};

use super::call;
use crate::pipeline::Origin;
use crate::pipeline::Services;
use crate::pipeline::failed_attempt;
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

pub const PLAN_CAPABILITY: &str = "organize.plan";
pub(crate) const EXECUTE_CAPABILITY: &str = "organize.execute";
pub(crate) const REPLACE_CAPABILITY: &str = "organize.replace";

pub(crate) struct VerifyAndImport(pub Services);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Payload {
    download_task_id: String,
}

impl TaskHandler for VerifyAndImport {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit verifyAndImport: {e}")))?;
            let planned =
                call(&svc, &task, PLAN_CAPABILITY, json!({ "downloadTaskId": payload.download_task_id })).await?;
            if planned.status != Status::Succeeded {
                return Err(failed_attempt(PLAN_CAPABILITY, &planned));
            }
            let plan = planned.output.unwrap_or(Value::Null);
            let (Some(organization), Some(fingerprint)) =
                (plan.get("organizationId").and_then(Value::as_str), plan.get("fingerprint").and_then(Value::as_str))
            else {
                return Err(format!("{PLAN_CAPABILITY} answered without an organization and fingerprint").into());
            };
            let input = json!({ "planId": organization, "fingerprint": fingerprint });
            let (capability, plan_type) = match plan.get("replaces").and_then(Value::as_bool) {
                Some(true) => (REPLACE_CAPABILITY, "replacement"),
                _ => (EXECUTE_CAPABILITY, "organization"),
            };
            if !svc.caps.is_authorized(&Origin::task(&task), capability, &input).await.map_err(|e| e.to_string())? {
                // A human is asked; their approval queues this task again (`super::approval_decided`).
                let by = crate::principal::task(&task.kind);
                let approval = svc
                    .authz
                    .request_approval(&svc.domain, plan_type, organization, Some(capability), &by)
                    .await
                    .map_err(|e| format!("cannot ask for an approval of organization {organization}: {e}"))?;
                return Ok(json!({
                    "organizationId": organization, "status": "awaiting-authorization", "approvalId": approval.id
                }));
            }
            let executed = call(&svc, &task, capability, input).await?;
            match executed.status {
                Status::Succeeded => {
                    if let Err(e) = super::watch::import_succeeded(&svc, organization).await {
                        tracing::warn!(organization, error = %e, "cannot close the decision about a failed import");
                    }
                    Ok(json!({ "organizationId": organization, "status": "succeeded", "output": executed.output }))
                }
                status => {
                    let failure = failed_attempt(capability, &executed);
                    // Only a failure nothing will try again is a human's to
                    // decide; an unknown outcome is settled by the ledger.
                    let last = task.attempts >= task.max_attempts;
                    let for_good = matches!(failure, HandlerError::GiveUp(_)) || last;
                    if status == Status::Failed && for_good {
                        let (download, error) = (&payload.download_task_id, failure.to_string());
                        if let Err(e) =
                            super::watch::import_failed(&svc, organization, download, &task.id, &error).await
                        {
                            tracing::warn!(organization, error = %e, "cannot open a decision about a failed import");
                        }
                    }
                    Err(failure)
                }
            }
        })
    }
}
