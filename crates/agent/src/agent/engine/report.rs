//! What a run touched and the AgentGoalReport built from it. The report
//! reads the business tables — the plans the run made or acted on, their
//! downloads, and the organizations that put files in the library — never
//! the model's words: a submitted download is not an imported one, and only
//! an organization record proves a title reached the library. The model's
//! final text is attached, marked unverified.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::verdict::Activity;
use crate::agent::runs::{Run, RunStatus};
use crate::domain::{Artifact, Author, Domain, DomainError, Plan};
use crate::domain::{ArtifactKind, DownloadStatus, OrganizationStatus, PlanStatus};
use crate::store::Db;

/// Where one touched plan stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// A draft nobody was asked to approve: nothing more will happen
    /// without a human.
    AwaitingHuman,
    /// A draft whose approval was asked for (or given and not yet used):
    /// the run that asked waits for it.
    AwaitingApproval(String),
    /// A draft a human rejected.
    Rejected,
    /// Still moving (reserved, downloading, importing).
    InFlight,
    /// In the library: an organization succeeded.
    Imported,
    /// Ended without reaching the library.
    Failed,
}

/// One plan as the report states it.
#[derive(Debug, Clone)]
pub struct Touched {
    pub plan: Plan,
    pub standing: Standing,
    pub entry: Value,
}

/// The plans a run touched: made by it, or named by its write calls' results.
pub async fn touched(domain: &Domain, db: &Db, run_id: &str) -> Result<Vec<Touched>, DomainError> {
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let mut plans = Vec::new();
    for plan in domain.plans_for_run(run_id).await? {
        ids.insert(plan.id.clone());
        plans.push(plan);
    }
    for record in crate::ledger::for_run(db, run_id).await? {
        let named = record
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str::<Value>(r).ok())
            .and_then(|v| v.get("planId").and_then(Value::as_str).map(str::to_string));
        if let Some(id) = named
            && ids.insert(id.clone())
        {
            match domain.plan(&id).await {
                Ok(plan) => plans.push(plan),
                Err(DomainError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    let mut out = Vec::new();
    for plan in plans {
        out.push(stand(domain, plan).await?);
    }
    Ok(out)
}

/// Where the human's say on a draft stands: the newest approval asked for
/// the acquisition plan, if any.
async fn human_say(authz: &crate::authz::Authz, plan_id: &str) -> Result<Standing, DomainError> {
    let newest = authz.newest_approval("acquisition", plan_id).await?;
    Ok(match newest {
        Some(a) if a.status.is_open() && a.expires_at > crate::store::now_ms() => Standing::AwaitingApproval(a.id),
        // A revoked approval is a human's no as a rejection is.
        Some(a) if a.status.is_refusal() => Standing::Rejected,
        _ => Standing::AwaitingHuman,
    })
}

async fn stand(domain: &Domain, plan: Plan) -> Result<Touched, DomainError> {
    let title = plan.payload.get("title").cloned().unwrap_or(Value::Null);
    let mut entry = json!({"planId": plan.id, "planStatus": plan.status, "title": title});
    let standing = match plan.status {
        PlanStatus::Draft => {
            let say = human_say(domain.authz(), &plan.id).await?;
            if let Standing::AwaitingApproval(approval) = &say {
                entry["approvalId"] = Value::from(approval.clone());
            }
            say
        }
        PlanStatus::Reserved => Standing::InFlight,
        PlanStatus::Failed | PlanStatus::Cancelled => Standing::Failed,
        _ => match domain.download_for_plan(&plan.id).await? {
            None => Standing::InFlight,
            Some(download) => {
                let organizations = domain.organizations_for_download(&download.id).await?;
                entry["download"] =
                    json!({"id": download.id, "status": download.status, "progress": download.progress});
                entry["organizations"] = organizations
                    .iter()
                    .map(|o| json!({"id": o.id, "status": o.status, "mode": o.mode, "items": o.items}))
                    .collect();
                if organizations.iter().any(|o| o.status == OrganizationStatus::Succeeded) {
                    Standing::Imported
                } else if matches!(download.status, DownloadStatus::Failed | DownloadStatus::Removed)
                    || organizations.iter().any(|o| o.status == OrganizationStatus::Failed)
                {
                    Standing::Failed
                } else {
                    Standing::InFlight
                }
            }
        },
    };
    entry["outcome"] = Value::from(match standing {
        Standing::AwaitingHuman => "draft: waiting for a human to approve",
        Standing::AwaitingApproval(_) => "draft: a human has been asked to approve it",
        Standing::Rejected => "draft: a human rejected it",
        Standing::InFlight if plan.status == PlanStatus::Submitted => "submitted, not yet in the library",
        Standing::InFlight => "in progress",
        Standing::Imported => "imported into the library",
        Standing::Failed => "failed",
    });
    Ok(Touched { plan, standing, entry })
}

/// Whether everything the run touched has settled: nothing is moving and
/// no approval the run could act on is outstanding.
pub fn settled(touched: &[Touched]) -> bool {
    touched.iter().all(|t| !matches!(t.standing, Standing::InFlight | Standing::AwaitingApproval(_)))
}

/// The run's writes whose outcome nobody knows (ledger rows still
/// `unknown`): a run with any is not reported as a success.
pub(crate) async fn unknown_writes(db: &Db, run_id: &str) -> Result<Vec<Value>, DomainError> {
    Ok(crate::ledger::for_run(db, run_id)
        .await?
        .into_iter()
        .filter(|r| r.status == crate::ledger::LedgerStatus::Unknown)
        .map(|r| json!({"invocationId": r.id, "capability": r.capability_id, "error": r.error}))
        .collect())
}

/// How a run ended, as its report states it.
pub struct Ending<'a> {
    pub status: RunStatus,
    /// Why, when it is not a success.
    pub reason: Option<&'a str>,
    pub touched: &'a [Touched],
    pub unknown: &'a [Value],
    pub tool_calls: &'a Value,
    pub activity: &'a Activity,
    pub final_text: &'a str,
}

/// Writes the AgentGoalReport artifact for `run`.
pub async fn write(domain: &Domain, run: &Run, ending: &Ending<'_>) -> Result<Artifact, DomainError> {
    let by = Author { principal: crate::principal::agent(&run.id), run_id: Some(run.id.clone()), capability: None };
    domain.create_artifact(&by, ArtifactKind::Report, Some(&format!("run:{}", run.id)), &body(run, ending)).await
}

/// The AgentGoalReport's body: how the run ended, or — for a run that has
/// not ended — where it stands now.
pub fn body(run: &Run, ending: &Ending<'_>) -> Value {
    let Ending { status, reason, touched, unknown, tool_calls, activity, final_text } = ending;
    let imported: Vec<&Value> = touched.iter().filter(|t| t.standing == Standing::Imported).map(|t| &t.entry).collect();
    json!({
        "type": "AgentGoalReport",
        "runId": run.id,
        "goal": run.goal,
        "mode": run.mode,
        "status": status.as_str(),
        "reason": reason,
        "reasons": activity.reasons(),
        "verified": {
            "plans": touched.iter().map(|t| &t.entry).collect::<Vec<_>>(),
            "imported": imported,
            "unknownWrites": unknown,
            "toolCalls": tool_calls,
            "calls": activity.summary(),
        },
        "modelFinalText": {"text": final_text, "verified": false},
        "note": "Built from the plans, downloads and organizations the run touched; only an organization record shows a title reached the library.",
    })
}
