//! The `investigateDecision` task: when `agent.auto_investigate` is on, a
//! new decision about a failed or stalled download or an ambiguous identity
//! — or about a failed import or submit, when a skill is its playbook —
//! gets one bounded, plan-only agent run that may only read (and resolve
//! identities) — at most `agent.investigate_max_tool_calls` tool calls and
//! `min(600 s, agent.max_duration_sec)` — created by
//! `system:auto-investigate`. One run per decision, ever: the run records
//! the decision it investigates under a unique index, so a second task, a
//! repeated event or a reopened decision starts nothing. A decision an
//! agent run caused is not investigated by another. While the run works
//! the decision is `investigating`; when it ends the agent layer hands the
//! decision back to a human with the run's conclusion. A skill naming the
//! kind in its `triggers` is the run's playbook: the run starts with it
//! read, and may call only what both the skill and the list above name.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::AgentRuntime;
use crate::agent::engine::investigation::RECOVER_BY;
use crate::agent::runs::{Investigation, NewRun, RunMode};
use crate::domain::{Decision, DomainError};
use crate::domain::{DecisionStatus, WITH_PLAYBOOK};
use crate::pipeline::{Origin, Services};
use crate::runtime::{Actor, EffectClass};
use crate::settings::Settings;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

/// Who starts investigations.
pub const BY: &str = "system:auto-investigate";
/// The longest an investigation runs, whatever the settings say.
const MAX_SECONDS: i64 = 600;
/// What an investigation may call besides the read capabilities.
const ALSO_ALLOWED: &[&str] = &["identity.resolve"];
/// What a recovery run may call besides, each within a grant.
const RECOVERY_ACTIONS: &[&str] = &["download.recheck", "task.retry"];
/// The kinds a recovery run may act on.
const RECOVERABLE: &[&str] = &["download_failed", "download_stalled"];
/// Giving a download up for another release changes where a title comes
/// from: a recovery run may do it only under a grant that names it.
const REPLACE: &str = "download.replace";

/// The root cause a decision is an occurrence of: its dedupe key without
/// the `#<n>` of later occurrences.
fn root_of(decision: &Decision) -> &str {
    decision.dedupe_key.split_once('#').map_or(decision.dedupe_key.as_str(), |(root, _)| root)
}

/// How a recovery of `decision` would be authorised: the recheck it would
/// make, judged as the run's own call will be. `None` when covered, else
/// why not.
async fn recovery_refused(svc: &Services, decision: &Decision) -> Result<Option<String>, HandlerError> {
    let action = if decision.kind == "download_stalled" { "resume" } else { "recheck" };
    let input = json!({"downloadTaskId": decision.subject, "action": action});
    let origin = Origin { actor: Actor::Agent, principal: RECOVER_BY.into(), ..Origin::cli(EffectClass::Execute) };
    match svc.caps.is_authorized(&origin, "download.recheck", &input).await {
        Ok(true) => Ok(None),
        Ok(false) => Ok(Some("no standing grant covers download.recheck for this download".into())),
        Err(e) => Ok(Some(format!("download.recheck cannot be used: {e}"))),
    }
}

/// Whether a grant that names `download.replace` itself (not `*`, a
/// wildcard or a policy) lets a recovery run give up `decision`'s download.
async fn replace_granted(svc: &Services, decision: &Decision) -> Result<bool, HandlerError> {
    let now = crate::store::now_ms();
    let grants = svc.authz.grants().await.map_err(|e| HandlerError::Retry(e.to_string()))?;
    if !grants.iter().any(|g| g.action == REPLACE && g.revoked_at.is_none() && g.expires_at > now) {
        return Ok(false);
    }
    let input = json!({"downloadTaskId": decision.subject});
    let origin = Origin { actor: Actor::Agent, principal: RECOVER_BY.into(), ..Origin::cli(EffectClass::Execute) };
    Ok(svc.caps.is_authorized(&origin, REPLACE, &input).await.unwrap_or(false))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Payload {
    decision_id: String,
}

/// Runs `investigateDecision` tasks.
pub struct InvestigateDecision {
    pub agent: Arc<AgentRuntime>,
    pub settings: Arc<Settings>,
}

async fn setting(settings: &Settings, key: &str) -> Result<Value, HandlerError> {
    settings.get(key).await.map_err(|e| HandlerError::Retry(format!("cannot read {key}: {e}")))
}

/// What the run is asked to do.
fn goal(decision: &Decision, acting: bool, replacing: bool) -> String {
    let task = match (acting, replacing) {
        (true, false) => {
            "Find out why and repair it with download.recheck (action recheck, or resume for a stalled download) or \
             task.retry where that is the fix; never change the download's source, never delete anything."
        }
        (true, true) => {
            "Find out why and repair it with download.recheck (action recheck, or resume for a stalled download) or \
             task.retry where that is the fix; only when the release itself cannot be repaired, give it up with \
             download.replace so another release is fetched. Never delete anything."
        }
        _ => "Find out why with the tools you have; change nothing.",
    };
    let subject = decision.subject.as_deref().unwrap_or("-");
    let problem = decision.evidence.get("problem").and_then(Value::as_str).unwrap_or("see the evidence");
    format!(
        "Investigate decision {} ({} about {subject}): {problem}. Evidence: {}. {task} End with a short \
         conclusion: what happened, and which of the decision's options ({}) you would choose and why.",
        decision.id,
        decision.kind,
        decision.evidence,
        decision
            .options
            .as_array()
            .map(|o| o.iter().filter_map(|o| o["label"].as_str()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default(),
    )
}

impl TaskHandler for InvestigateDecision {
    fn run(&self, task: Task) -> HandlerFuture {
        let (agent, settings) = (self.agent.clone(), self.settings.clone());
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit investigateDecision: {e}")))?;
            let svc = agent.services().clone();
            let decision = match svc.domain.decision(&payload.decision_id).await {
                Ok(d) => d,
                Err(DomainError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
                Err(e) => return Err(HandlerError::GiveUp(e.to_string())),
            };
            let skip = |why: &str| Ok(json!({"decisionId": decision.id, "investigated": false, "why": why}));
            if setting(&settings, "agent.auto_investigate").await? != Value::Bool(true) {
                return skip("agent.auto_investigate is off");
            }
            // Investigating already: an attempt that stopped before its run
            // was recorded; the unique run per decision settles it below.
            if !matches!(decision.status, DecisionStatus::Open | DecisionStatus::Investigating) {
                return skip("the decision is no longer open");
            }
            if decision.evidence.get("openedByRun").is_some() {
                return skip("an agent run caused it");
            }
            let recover = setting(&settings, "agent.auto_investigate_mode").await?.as_str() == Some("recover")
                && RECOVERABLE.contains(&decision.kind.as_str());
            let mut plan = json!({});
            let mut acting = false;
            if recover {
                let root = root_of(&decision).to_string();
                let past = svc.domain.decisions_of_root(&root).await.map_err(|e| HandlerError::Retry(e.to_string()))?;
                let attempted = past
                    .iter()
                    .filter(|d| d.id != decision.id && d.evidence.pointer("/autoRecover/attempt").is_some())
                    .count();
                let limit = setting(&settings, "agent.investigate_max_attempts").await?.as_i64().unwrap_or(2) as usize;
                if attempted >= limit {
                    let evidence = json!({"autoRecover": {"skipped": "attempts_exhausted", "attempts": attempted,
                        "suggestion": format!("{root} was recovered automatically {attempted} times and came back; look at it yourself")}});
                    match svc.domain.advance_decision(&decision.id, DecisionStatus::AwaitingUser, &evidence).await {
                        Ok(_) | Err(DomainError::Conflict(_)) => {}
                        Err(e) => return Err(HandlerError::Retry(e.to_string())),
                    }
                    return skip("attempts_exhausted");
                }
                match recovery_refused(&svc, &decision).await? {
                    None => {
                        acting = true;
                        plan = json!({"autoRecover": {"attempt": attempted + 1}});
                    }
                    Some(why) => {
                        plan = json!({"autoRecover": {"degraded": true, "why": why,
                            "suggestion": "give a standing grant for download.recheck (or policy.automation) to let Capstan recheck by itself, or choose Force recheck"}});
                    }
                }
            }
            let calls = setting(&settings, "agent.investigate_max_tool_calls").await?.as_i64().unwrap_or(8);
            let seconds = setting(&settings, "agent.max_duration_sec").await?.as_i64().unwrap_or(MAX_SECONDS);
            let snapshot = svc.caps.runtime().snapshot();
            let mut allowlist: Vec<String> = snapshot
                .active
                .values()
                .filter(|l| l.descriptor.label == EffectClass::Read || ALSO_ALLOWED.contains(&l.descriptor.id.as_str()))
                .map(|l| l.descriptor.id.clone())
                .collect();
            let replacing = acting && replace_granted(&svc, &decision).await?;
            if acting {
                allowlist.extend(RECOVERY_ACTIONS.iter().map(|a| a.to_string()));
            }
            if replacing {
                allowlist.push(REPLACE.to_string());
            }
            // A skill that is the kind's playbook: the run starts with it
            // read, and may call only what both it and the mode's list name.
            let skills = agent.skill_set().await;
            let playbook = crate::skills::playbook_for(&skills, &decision.kind);
            if let Some(skill) = playbook {
                allowlist.retain(|id| skill.tools.contains(id));
            } else if WITH_PLAYBOOK.contains(&decision.kind.as_str()) {
                return skip("no skill is the playbook for this kind of decision");
            }
            allowlist.sort();
            let new = NewRun {
                goal: goal(&decision, acting, replacing),
                mode: if acting { RunMode::Execute } else { RunMode::PlanOnly },
                allowlist: Some(allowlist),
                created_by: if acting { RECOVER_BY.into() } else { BY.into() },
                investigation: Some(Investigation {
                    decision_id: decision.id.clone(),
                    max_tool_calls: calls,
                    max_duration_sec: seconds.min(MAX_SECONDS),
                }),
                skill: playbook.map(|s| s.name.clone()),
            };
            // Investigating before the run starts: a quick run that ends
            // must find it so, and hand it back to a human.
            if decision.status == DecisionStatus::Open {
                let mut evidence =
                    json!({"investigation": {"by": if acting { RECOVER_BY } else { BY }, "maxToolCalls": calls}});
                if let (Some(into), Some(from)) = (evidence.as_object_mut(), plan.as_object()) {
                    into.extend(from.clone());
                }
                match svc.domain.advance_decision(&decision.id, DecisionStatus::Investigating, &evidence).await {
                    Ok(_) => {}
                    Err(DomainError::Conflict(_)) => return skip("the decision changed meanwhile"),
                    Err(e) => return Err(HandlerError::Retry(e.to_string())),
                }
            }
            let run = match agent.start(new).await {
                Ok(run) => run,
                Err(e) if e.is_duplicate() => return skip("an investigation was started already"),
                Err(e) => return Err(HandlerError::Retry(format!("cannot start the investigation: {e}"))),
            };
            Ok(json!({"decisionId": decision.id, "investigated": true, "runId": run.id}))
        })
    }
}
