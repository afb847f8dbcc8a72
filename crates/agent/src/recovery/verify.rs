//! The `verifyRecovery` task: after a recovery run ends, whether it
//! recovered what its decision was about is read from the facts, never from
//! the model. Every `min(agent.goal_poll_sec, 30)` seconds, for at most
//! `agent.recover_verify_sec` after the run ended, it asks qBittorrent
//! through `download.status`: the download back in `queued`, `downloading`
//! or `completed` (or the store's `importing` / `imported`) is recovered —
//! the decision is resolved by `system:auto-recover` with
//! `resolution.execution = {kind: "agent_recover", verified: true, facts}`,
//! and the run's report is written again to open with "Recovered
//! (verified)", the model's own words after it, marked unverified (one
//! that did not recover opens "Not recovered: …" with the facts instead);
//! `removed` is not recovered. A task the run retried (`task.retry`) is
//! read too: `succeeded` is recovered, `failed`, `dead` or `cancelled` is
//! not. A run that made no recovery call that went through (it ran out of
//! budget first, or every call was refused) recovered nothing: unless the
//! facts already show the cause gone, that is concluded at once rather than
//! waited out. Not recovered in time, the decision waits for a human
//! with `evidence.autoRecover.outcome` and a suggestion, and nothing tries
//! again by itself.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::AgentRuntime;
use crate::agent::engine::investigation::RECOVER_BY;
use crate::domain::{Answer, Author, Decision, DomainError};
use crate::domain::{ArtifactKind, DecisionStatus, DownloadStatus};
use crate::pipeline::{Origin, Services};
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
    pub agent: Arc<AgentRuntime>,
    pub settings: Arc<Settings>,
}

/// What the facts of a recovery show, in words: the tasks it retried and
/// how each ended, or the download as qBittorrent (or the store) shows it.
fn facts_said(facts: &Value) -> String {
    if let Some(tasks) = facts.get("retriedTasks").and_then(Value::as_array) {
        let each: Vec<String> = tasks
            .iter()
            .map(|t| format!("{} {}", t["taskId"].as_str().unwrap_or("?"), t["status"].as_str().unwrap_or("unknown")))
            .collect();
        return match each.as_slice() {
            [one] if one.ends_with(" succeeded") => "the task it retried has succeeded".to_string(),
            [one] => format!("the task it retried is {}", one.split_once(' ').map_or("unknown", |(_, s)| s)),
            _ => format!("the tasks it retried: {}", each.join(", ")),
        };
    }
    let status = facts.pointer("/client/status").or_else(|| facts.get("status")).and_then(Value::as_str);
    match (status, facts.pointer("/client/error")) {
        (Some(status), _) => format!("qBittorrent shows the download {status}"),
        (None, Some(error)) => format!("qBittorrent could not be read: {error}"),
        (None, None) => "nothing shows the download moving again".to_string(),
    }
}

/// Writes the recovery run's report again, opening with what the facts
/// showed — "Recovered (verified): …" or "Not recovered: …" — and its
/// summary and final words with it; the model's words follow, still
/// unverified.
async fn report_recovery(agent: &AgentRuntime, run_id: &str, headline: &str, facts: &Value) -> Result<(), String> {
    let run = agent.runs().get(run_id).await.map_err(|e| e.to_string())?;
    let domain = &agent.services().domain;
    let said = run.final_text.clone().unwrap_or_default();
    // A report written again keeps the model's words from the first.
    let said = said.split_once("The model said (unverified): ").map_or(said.as_str(), |(_, s)| s).to_string();
    let text = format!("{headline}.\n\nThe model said (unverified): {said}");
    let mut body = match &run.report_id {
        Some(id) => domain.artifact(id).await.map_err(|e| e.to_string())?.body,
        None => json!({"type": "AgentGoalReport", "runId": run.id}),
    };
    body["summary"] = Value::from(text.as_str());
    let verified = headline.starts_with("Recovered (verified)");
    body["recovery"] = json!({"verified": verified, "facts": facts});
    let by = Author { principal: RECOVER_BY.into(), run_id: Some(run.id.clone()), capability: None };
    let report = domain.create_artifact(&by, ArtifactKind::Report, Some(&format!("run:{}", run.id)), &body).await;
    let report = report.map_err(|e| e.to_string())?;
    agent.runs().set_outcome(&run.id, Some(&report.id), &text).await.map_err(|e| e.to_string())
}

/// What the recovery run did that went through: the ids of the tasks it
/// retried, and whether it made any recovery call at all.
async fn recovery_calls(svc: &Services, run_id: &str) -> Result<(Vec<String>, bool), HandlerError> {
    let calls = crate::ledger::for_run(&svc.db, run_id).await.map_err(|e| HandlerError::Retry(e.to_string()))?;
    let through: Vec<_> = calls.iter().filter(|c| c.status == crate::ledger::LedgerStatus::Succeeded).collect();
    let retried = through
        .iter()
        .filter(|c| c.capability_id == "task.retry")
        .filter_map(|c| c.result.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()))
        .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    Ok((retried, !through.is_empty()))
}

/// What the tasks a run retried say now: `Some(true)` when every one
/// succeeded, `Some(false)` when one ended without succeeding, `None` while
/// one is still to run.
async fn retried_facts(svc: &Services, retried: &[String]) -> (Option<bool>, Value) {
    let tasks = svc.domain.tasks().clone();
    let mut seen = Vec::new();
    let mut verdict = Some(true);
    for id in retried {
        let status = match tasks.get(id).await {
            Ok(Some(t)) => t.status.as_str().to_string(),
            Ok(None) => "missing".to_string(),
            Err(e) => format!("unreadable: {e}"),
        };
        match status.as_str() {
            "succeeded" => {}
            "failed" | "dead" | "cancelled" | "missing" => verdict = Some(false),
            _ if verdict == Some(true) => verdict = None,
            _ => {}
        }
        seen.push(json!({"taskId": id, "status": status}));
    }
    (verdict, json!({"retriedTasks": seen, "seenAt": now_ms()}))
}

/// What the facts say now: `Some(true)` recovered, `Some(false)` lost for
/// good, `None` not yet; and the facts.
async fn facts(svc: &Services, task: &Task, decision: &Decision, retried: &[String]) -> (Option<bool>, Value) {
    if !retried.is_empty() {
        return retried_facts(svc, retried).await;
    }

    let Some(download) = decision.subject.as_deref() else { return (Some(false), json!({"why": "no subject"})) };
    if let Ok(stored) = svc.domain.download(download).await {
        match stored.status {
            DownloadStatus::Importing | DownloadStatus::Imported => {
                return (Some(true), json!({"download": download, "status": stored.status}));
            }
            DownloadStatus::Removed => return (Some(false), json!({"download": download, "status": stored.status})),
            _ => {}
        }
    }
    let read = svc.caps.invoke(&Origin::task(task), "download.status", &json!({"downloadTaskIds": [download]})).await;
    let seen = match read {
        Ok(inv) => inv.output.and_then(|o| o.pointer("/downloads/0").cloned()).unwrap_or(Value::Null),
        Err(e) => json!({"error": e.to_string()}),
    };
    let status = seen.get("status").and_then(Value::as_str).and_then(|s| DownloadStatus::parse(s).ok());
    let moving = [DownloadStatus::Queued, DownloadStatus::Downloading, DownloadStatus::Completed];
    let verdict = status.is_some_and(|s| moving.contains(&s)).then_some(true);
    (verdict, json!({"download": download, "client": seen, "seenAt": now_ms()}))
}

/// Why a run that made no recovery call recovered nothing.
async fn recovered_nothing(agent: &AgentRuntime, run_id: &str) -> String {
    let status = agent.runs().get(run_id).await.map(|r| r.status.as_str().to_string()).unwrap_or_default();
    format!("nothing was recovered: the run ended {status} without a recovery call going through")
}

async fn number(settings: &Settings, key: &str, default: i64) -> i64 {
    settings.get(key).await.ok().and_then(|v| v.as_i64()).unwrap_or(default)
}

impl TaskHandler for VerifyRecovery {
    fn run(&self, task: Task) -> HandlerFuture {
        let (agent, settings) = (self.agent.clone(), self.settings.clone());
        let svc = agent.services().clone();
        Box::pin(async move {
            let payload: Payload = serde_json::from_value(task.payload.clone())
                .map_err(|e| HandlerError::GiveUp(format!("payload does not fit verifyRecovery: {e}")))?;
            let poll = Duration::from_secs(number(&settings, "agent.goal_poll_sec", 30).await.clamp(1, 30) as u64);
            let deadline = task.created_at + number(&settings, "agent.recover_verify_sec", 600).await * 1000;
            let (retried, acted) = recovery_calls(&svc, &payload.run_id).await?;
            loop {
                let decision = match svc.domain.decision(&payload.decision_id).await {
                    Ok(d) => d,
                    Err(DomainError::Sql(e)) => return Err(HandlerError::Retry(e.to_string())),
                    Err(e) => return Err(HandlerError::GiveUp(e.to_string())),
                };
                if decision.status.is_final() {
                    return Ok(json!({"decisionId": decision.id, "verified": false, "why": "answered meanwhile"}));
                }
                let (verdict, seen) = facts(&svc, &task, &decision, &retried).await;
                if verdict == Some(true) {
                    let execution =
                        json!({"kind": "agent_recover", "verified": true, "runId": payload.run_id, "facts": seen});
                    // The report first: whoever sees the decision closed
                    // finds the run's report already saying what was seen.
                    let headline = format!("Recovered (verified): {}", facts_said(&seen));
                    if let Err(e) = report_recovery(&agent, &payload.run_id, &headline, &seen).await {
                        tracing::warn!(run = %payload.run_id, error = %e, "could not write the verified report");
                    }
                    let answer = Answer::Recovered { execution };
                    return match svc.domain.answer_decision(&decision.id, &answer, RECOVER_BY).await {
                        Ok(_) | Err(DomainError::Conflict(_)) => {
                            Ok(json!({"decisionId": decision.id, "verified": true}))
                        }
                        Err(e) => Err(HandlerError::Retry(e.to_string())),
                    };
                }
                if verdict == Some(false) || !acted || now_ms() >= deadline {
                    let outcome = match verdict {
                        Some(false) => "failed".to_string(),
                        _ if !acted => recovered_nothing(&agent, &payload.run_id).await,
                        _ => "not recovered in time".to_string(),
                    };
                    // The run's report says so first, with the facts.
                    let headline = match verdict {
                        _ if !acted => {
                            format!("Not recovered: {}", outcome.trim_start_matches("nothing was recovered: "))
                        }
                        Some(false) => format!("Not recovered: {}", facts_said(&seen)),
                        _ => format!("Not recovered: when the wait ran out, {}", facts_said(&seen)),
                    };
                    if let Err(e) = report_recovery(&agent, &payload.run_id, &headline, &seen).await {
                        tracing::warn!(run = %payload.run_id, error = %e, "could not write the unrecovered report");
                    }
                    let evidence = json!({"autoRecover": {"outcome": outcome, "runId": payload.run_id, "facts": seen,
                        "suggestion": "look at the download in qBittorrent; Force recheck once its files are back, or leave it"}});
                    match svc.domain.advance_decision(&decision.id, DecisionStatus::AwaitingUser, &evidence).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facts_are_said_in_words() {
        let one = |status: &str| json!({"retriedTasks": [{"taskId": "t1", "status": status}]});
        assert_eq!(facts_said(&one("succeeded")), "the task it retried has succeeded");
        assert_eq!(facts_said(&one("dead")), "the task it retried is dead");
        let two =
            json!({"retriedTasks": [{"taskId": "t1", "status": "dead"}, {"taskId": "t2", "status": "succeeded"}]});
        assert_eq!(facts_said(&two), "the tasks it retried: t1 dead, t2 succeeded");
        assert_eq!(facts_said(&json!({"client": {"status": "stalled"}})), "qBittorrent shows the download stalled");
        assert!(facts_said(&json!({"client": null, "download": "d"})).contains("nothing shows"));
    }
}
