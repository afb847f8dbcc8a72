//! The `verifyRecovery` task: after a recovery run ends, whether it
//! recovered what its decision was about is read from the facts, never from
//! the model. Every `min(agent.goal_poll_sec, 30)` seconds, for at most
//! `agent.recover_verify_sec` after the run ended, it asks qBittorrent
//! through `download.status`: the download back in `queued`, `downloading`
//! or `completed` (or the store's `importing` / `imported`) is recovered —
//! the decision is resolved by `system:auto-recover` with
//! `resolution.execution = {kind: "agent_recover", verified: true, facts}`;
//! `removed` is not. Not recovered in time, the decision waits for a human
//! with `evidence.autoRecover.outcome` and a suggestion, and nothing tries
//! again by itself.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::engine::investigation::RECOVER_BY;
use crate::domain::{Answer, Decision, DomainError};
use crate::pipeline::{Capabilities, Origin};
use crate::settings::Settings;
use crate::store::now_ms;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Payload {
    decision_id: String,
    run_id: String,
}

/// Runs `verifyRecovery` tasks.
pub struct VerifyRecovery {
    pub caps: Arc<Capabilities>,
    pub settings: Arc<Settings>,
}

/// What the facts say now: `Some(true)` recovered, `Some(false)` lost for
/// good, `None` not yet; and the facts.
async fn facts(caps: &Capabilities, task: &Task, decision: &Decision) -> (Option<bool>, Value) {
    let Some(download) = decision.subject.as_deref() else { return (Some(false), json!({"why": "no subject"})) };
    if let Ok(stored) = caps.domain().download(download).await {
        match stored.status.as_str() {
            "importing" | "imported" => return (Some(true), json!({"download": download, "status": stored.status})),
            "removed" => return (Some(false), json!({"download": download, "status": "removed"})),
            _ => {}
        }
    }
    let read = caps.invoke(&Origin::task(task), "download.status", &json!({"downloadTaskIds": [download]})).await;
    let seen = match read {
        Ok(inv) => inv.output.and_then(|o| o.pointer("/downloads/0").cloned()).unwrap_or(Value::Null),
        Err(e) => json!({"error": e.to_string()}),
    };
    let status = seen.get("status").and_then(Value::as_str).unwrap_or_default();
    let verdict = matches!(status, "queued" | "downloading" | "completed").then_some(true);
    (verdict, json!({"download": download, "client": seen, "seenAt": now_ms()}))
}

async fn number(settings: &Settings, key: &str, default: i64) -> i64 {
    settings.get(key).await.ok().and_then(|v| v.as_i64()).unwrap_or(default)
}

impl TaskHandler for VerifyRecovery {
    fn run(&self, task: Task) -> HandlerFuture {
        let (caps, settings) = (self.caps.clone(), self.settings.clone());
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit verifyRecovery: {e}")))?;
            let poll = Duration::from_secs(number(&settings, "agent.goal_poll_sec", 30).await.clamp(1, 30) as u64);
            let deadline = task.created_at + number(&settings, "agent.recover_verify_sec", 600).await * 1000;
            loop {
                let decision = match caps.domain().decision(&payload.decision_id).await {
                    Ok(d) => d,
                    Err(DomainError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
                    Err(e) => return Err(HandlerError::GiveUp(e.to_string())),
                };
                if matches!(decision.status.as_str(), "resolved" | "dismissed") {
                    return Ok(json!({"decisionId": decision.id, "verified": false, "why": "answered meanwhile"}));
                }
                let (verdict, seen) = facts(&caps, &task, &decision).await;
                if verdict == Some(true) {
                    let execution =
                        json!({"kind": "agent_recover", "verified": true, "runId": payload.run_id, "facts": seen});
                    let answer = Answer::Recovered { execution };
                    return match caps.domain().answer_decision(&decision.id, &answer, RECOVER_BY).await {
                        Ok(_) | Err(DomainError::Conflict(_)) => {
                            Ok(json!({"decisionId": decision.id, "verified": true}))
                        }
                        Err(e) => Err(HandlerError::Retry(e.to_string())),
                    };
                }
                if verdict == Some(false) || now_ms() >= deadline {
                    let outcome = if verdict == Some(false) { "failed" } else { "not recovered in time" };
                    let evidence = json!({"autoRecover": {"outcome": outcome, "runId": payload.run_id, "facts": seen,
                        "suggestion": "look at the download in qBittorrent; Force recheck once its files are back, or leave it"}});
                    match caps.domain().advance_decision(&decision.id, "awaiting_user", &evidence).await {
                        Ok(_) | Err(DomainError::Conflict(_)) => {}
                        Err(e) => return Err(HandlerError::Retry(e.to_string())),
                    }
                    return Ok(json!({"decisionId": decision.id, "verified": false, "outcome": outcome}));
                }
                tokio::time::sleep(poll).await;
            }
        })
    }
}
