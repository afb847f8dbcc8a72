//! The `resolveDecision` task: carries out the option a resolved decision
//! names. A capability option is invoked through the one invoke path for
//! whoever chose it (`Origin::task_for`: an administrator's choice is
//! human authorisation, a key's needs a grant or an approval) in the
//! task's idempotency scope, so an attempt after a crash meets the ledger
//! record of the one before and nothing runs twice; `retry` queues the
//! linked task again; `reevaluate` and `accept` queue the acquisition
//! evaluation of the decision's subject; `another` fails a failed submit's
//! plan and evaluates its slot again, `unwant` stops wanting its title. The outcome is recorded once on
//! the decision; a task that finds it recorded does nothing.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::domain::{Decision, DomainError};
use crate::domain::{DecisionStatus, PlanStatus};
use crate::pipeline::{Origin, Services, failed_attempt};
use crate::runtime::{EffectClass, Status};
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskError, TaskHandler, Tasks};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Payload {
    decision_id: String,
}

/// Runs `resolveDecision` tasks.
pub struct ResolveDecision(pub Services);

fn domain_failure(e: DomainError) -> HandlerError {
    match e {
        DomainError::Sql(e) => HandlerError::Retry(e.to_string()),
        other => HandlerError::GiveUp(other.to_string()),
    }
}

impl TaskHandler for ResolveDecision {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit resolveDecision: {e}")))?;
            let decision = svc.domain.decision(&payload.decision_id).await.map_err(domain_failure)?;
            let Some(resolution) = decision.resolution.clone().filter(|_| decision.status == DecisionStatus::Resolved)
            else {
                return Err(HandlerError::GiveUp(format!(
                    "decision {} is {}, not resolved",
                    decision.id, decision.status
                )));
            };
            if let Some(done) = resolution.get("execution") {
                return Ok(done.clone());
            }
            let option = &resolution["option"];
            let execution = carry_out(&svc, &task, &decision, option).await?;
            match svc.domain.record_execution(&decision.id, &execution).await {
                Ok(_) => Ok(execution),
                // Recorded by an attempt that raced this one: that record stands.
                Err(DomainError::Conflict(_)) => Ok(execution),
                Err(e) => Err(domain_failure(e)),
            }
        })
    }
}

/// Does what `option` says and describes what came of it.
async fn carry_out(svc: &Services, task: &Task, decision: &Decision, option: &Value) -> Result<Value, HandlerError> {
    if let Some(capability) = option.get("capabilityId").and_then(Value::as_str) {
        let by = decision.resolved_by.as_deref().unwrap_or_default();
        if let Some(reason) = refusal(svc, decision, option) {
            let error = json!({"kind": "denied", "message": reason});
            return Ok(
                json!({"kind": "capability", "capabilityId": capability, "by": by, "status": "failed", "error": error}),
            );
        }
        let input = option.get("input").cloned().unwrap_or_else(|| json!({}));
        let mut origin = Origin::task_for(task, by);
        if decision.opened_by.is_some() {
            // Whatever its label has become since it was chosen.
            origin.ceiling = EffectClass::Propose;
        }
        let inv = svc.caps.invoke(&origin, capability, &input).await.map_err(|e| HandlerError::Retry(e.to_string()))?;
        return match inv.status {
            // An outcome nobody knows is settled by the ledger on the next
            // attempt (replayed, verified or left unknown by the
            // capability's replay policy), never guessed here.
            Status::Unknown => Err(failed_attempt(capability, &inv)),
            status => Ok(json!({
                "kind": "capability",
                "capabilityId": capability,
                "by": by,
                "status": status,
                "invocationId": inv.invocation_id,
                "output": inv.output,
                "error": inv.error,
            })),
        };
    }
    let action = option.get("action").and_then(Value::as_str).unwrap_or_default();
    let tasks = svc.domain.tasks().clone();
    match action {
        "retry" => {
            let id = option.get("taskId").and_then(Value::as_str).unwrap_or_default();
            let outcome = match tasks.retry(id).await {
                Ok(t) => json!({"queued": t.status.as_str()}),
                Err(TaskError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
                Err(e) => json!({"notRetried": e.to_string()}),
            };
            Ok(json!({"kind": "retry", "taskId": id, "outcome": outcome}))
        }
        "another" | "unwant" => give_up(svc, &tasks, decision, action).await,
        "reevaluate" | "accept" if decision.kind == "agent_budget" => {
            Ok(json!({"kind": action, "outcome": "recorded; the run goes on when it is sent a message"}))
        }
        "reevaluate" | "accept" => {
            let slot = slot_of(svc, decision).await;
            let payload = slot.as_ref().map_or_else(|| json!({}), |s| json!({"slotId": s}));
            let key = match &slot {
                Some(s) => format!("{}:{s}", crate::acquisition::EVALUATE_ACQUISITION),
                None => crate::acquisition::EVALUATE_ACQUISITION.to_string(),
            };
            let queued = crate::acquisition::enqueue(
                &tasks,
                crate::acquisition::EVALUATE_ACQUISITION,
                slot.as_deref(),
                payload,
                &key,
            )
            .await
            .map_err(|e| HandlerError::Retry(e.to_string()))?;
            Ok(json!({"kind": action, "queued": queued.id, "slotId": slot}))
        }
        other => Err(HandlerError::GiveUp(format!("option action {other:?} has nothing to carry out"))),
    }
}

/// Why `option` of `decision` may not be carried out, if it may not. A
/// human who chooses what a component offered authorises what the option
/// says, so a component's decision may offer only a loaded capability
/// labelled read, preview or propose: an outside effect is the host's to
/// offer (a host decision's options are the host's own).
pub fn refusal(svc: &Services, decision: &Decision, option: &Value) -> Option<String> {
    let opener = decision.opened_by.as_deref()?;
    let capability = option.get("capabilityId").and_then(Value::as_str)?;
    let Some(loaded) = svc.caps.runtime().snapshot().get(capability) else {
        return Some(format!("{capability}, which {opener} offered, is not loaded"));
    };
    let label = loaded.descriptor.label;
    (label > EffectClass::Propose).then(|| {
        format!(
            "{opener} opened this decision, and a component's decision may offer only calls without an outside \
             effect; {capability} is labelled {label}"
        )
    })
}

/// `another`: the plan a failed submit was about fails, and the slot is
/// evaluated again without its release; `unwant`: the plan's title is no
/// longer wanted (its plans not yet handed over are cancelled). Only a
/// host decision about a plan offers them.
async fn give_up(svc: &Services, tasks: &Tasks, decision: &Decision, action: &str) -> Result<Value, HandlerError> {
    let (Some(plan_id), None, crate::domain::SUBMIT_FAILED) =
        (decision.subject.as_deref(), decision.opened_by.as_deref(), decision.kind.as_str())
    else {
        return Err(HandlerError::GiveUp(format!("option action {action:?} is only for a failed submit's decision")));
    };
    let domain = &svc.domain;
    let plan = domain.plan(plan_id).await.map_err(domain_failure)?;
    if action == "unwant" {
        let slot = domain.slot(&plan.slot_id).await.map_err(domain_failure)?;
        let outcome = match domain.unwant_title(&slot.entity_id, slot.season).await {
            Ok(_) => json!("no longer wanted"),
            Err(DomainError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
            Err(e) => json!({"notDone": e.to_string()}),
        };
        return Ok(json!({"kind": action, "planId": plan_id, "slotId": plan.slot_id, "outcome": outcome}));
    }
    let reason = match &plan.last_failure {
        Some(why) => format!("another release was chosen after the submit failed: {why}"),
        None => "another release was chosen".to_string(),
    };
    let ended = match domain.end_plan(plan_id, PlanStatus::Failed, &reason).await {
        Ok(plan) => json!(plan.status),
        Err(DomainError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
        // Ended or submitted meanwhile: the slot is looked at all the same.
        Err(e) => json!({"notEnded": e.to_string()}),
    };
    let key = format!("{}:{}", crate::acquisition::EVALUATE_ACQUISITION, plan.slot_id);
    let payload = json!({"slotId": plan.slot_id});
    let queued = crate::acquisition::enqueue(
        tasks,
        crate::acquisition::EVALUATE_ACQUISITION,
        Some(&plan.slot_id),
        payload,
        &key,
    )
    .await
    .map_err(|e| HandlerError::Retry(e.to_string()))?;
    Ok(json!({"kind": action, "planId": plan_id, "slotId": plan.slot_id, "plan": ended, "queued": queued.id}))
}

/// The wanted slot a decision about a download is about, when there is one.
async fn slot_of(svc: &Services, decision: &Decision) -> Option<String> {
    let subject = decision.subject.as_deref()?;
    if decision.kind == crate::domain::SUBMIT_FAILED {
        return Some(svc.domain.plan(subject).await.ok()?.slot_id);
    }
    if !decision.kind.starts_with("download_") {
        return None;
    }
    let download = svc.domain.download(subject).await.ok()?;
    Some(svc.domain.plan(&download.plan_id).await.ok()?.slot_id)
}
