//! What a run lets go of when it stops short — cancelled, failed or over
//! budget: the tool calls of the model's last answer, each as it stands.
//! A call with a result keeps its status; one that had started and has no
//! result is `result_unknown` (never "not run": it may have done its
//! work); one that never started is `not_run`. The snapshot is published
//! as an `agent.snapshot` event with the plan and the calls' inputs
//! redacted to field names, types and sizes. Calls a crash or an error left
//! without a result are closed in the session log in those words, so the
//! conversation can go on from there. Nothing is run or replayed here.
//!
//! The snapshot is best effort ([`best_effort`]): it gets
//! [`SNAPSHOT_WAIT`], and one that fails or takes longer is logged and
//! left out — the run still ends with its own status, never held back by
//! what it let go of.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::toolbox::ToolStatus;
use super::{AgentRuntime, EngineError};
use crate::agent::providers::{Block, Role};
use crate::agent::session_log::Entry;
use crate::audit::summarize_input;

/// How a call of the last answer stands when the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallState {
    /// It never started.
    NotRun,
    /// It started and has no result (or its result is `unknown`): it may
    /// have done its work.
    ResultUnknown,
    /// It ended, as its last event says.
    Ended(ToolStatus),
}

impl CallState {
    /// The call's latest `agent.tool_call` event, if any, says how far it got.
    fn of(event: Option<&Value>) -> CallState {
        let Some(e) = event else { return CallState::NotRun };
        if e["phase"] == "started" {
            return CallState::ResultUnknown;
        }
        match e["status"].as_str().and_then(ToolStatus::parse) {
            None | Some(ToolStatus::Unknown) => CallState::ResultUnknown,
            Some(status) => CallState::Ended(status),
        }
    }

    /// The word the snapshot event uses.
    fn as_str(self) -> &'static str {
        match self {
            CallState::NotRun => "not_run",
            CallState::ResultUnknown => "result_unknown",
            CallState::Ended(status) => status.as_str(),
        }
    }
}

/// The longest a stopping run waits for its snapshot.
pub(super) const SNAPSHOT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Takes the snapshot of run `run_id`, which stops for `reason`, waiting
/// at most [`SNAPSHOT_WAIT`]; a snapshot that fails or is late is logged,
/// and the run ends without it.
pub(super) async fn best_effort(rt: &AgentRuntime, run_id: &str, reason: &str) {
    match tokio::time::timeout(SNAPSHOT_WAIT, take(rt, run_id, reason)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(run = %run_id, error = %e, "the run's snapshot could not be taken; it ends without one")
        }
        Err(_) => tracing::warn!(
            run = %run_id,
            wait_secs = SNAPSHOT_WAIT.as_secs(),
            "the run's snapshot took too long; it ends without one"
        ),
    }
}

/// Takes the snapshot of run `run_id`, which stops for `reason`. A log
/// file is read on a blocking thread, so the wait above bounds a slow disk
/// too (and a slow database).
async fn take(rt: &AgentRuntime, run_id: &str, reason: &str) -> Result<(), EngineError> {
    let (mut log, session) = rt.sessions.open(run_id).await?;
    let turn = session.request.as_ref().map_or(0, |(_, seq)| *seq);
    let Some(at) = session.messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Ok(());
    };
    let calls: Vec<(&String, &String, &Value)> = session.messages[at]
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id, name, input)),
            _ => None,
        })
        .collect();
    // The latest event of each of this turn's calls says how far it got.
    let events = rt.runs.events_of_kind(run_id, "agent.tool_call").await?;
    let mut latest: HashMap<&str, &Value> = HashMap::new();
    for e in events.iter().filter(|e| e.payload["turn"].as_i64() == Some(turn) && e.payload["actor"] == "agent") {
        if let Some(id) = e.payload["toolCallId"].as_str() {
            latest.insert(id, &e.payload);
        }
    }
    let mut shown = Vec::new();
    let mut closing = Vec::new();
    for (id, name, input) in &calls {
        let event = latest.get(id.as_str()).copied();
        let state = CallState::of(event);
        if session.pending_calls().iter().any(|(pending, _, _)| pending == *id) {
            closing.push(close(id, state, reason, event));
        }
        let shown_state = state.as_str();
        shown.push(json!({"toolCallId": id, "name": name, "state": shown_state, "input": summarize_input(input)}));
    }
    if !closing.is_empty() {
        log.append(&Entry::ToolResults { content: closing }).await?;
    }
    let payload = json!({"reason": reason, "turn": turn, "plan": session.plan, "calls": shown});
    rt.runs.append_event(run_id, "agent.snapshot", &payload).await?;
    Ok(())
}

/// The result a call left without one gets when the run stops.
fn close(id: &str, state: CallState, reason: &str, event: Option<&Value>) -> Block {
    let content = match state {
        CallState::NotRun => {
            json!({"status": "failed", "error": format!("not run: the run stopped ({reason}) before this call started")})
        }
        CallState::ResultUnknown => json!({"status": "unknown", "message": format!(
            "result unknown: the run stopped ({reason}) while this call was running; check before repeating it")}),
        CallState::Ended(status) => {
            json!({"status": status.as_str(), "invocation_id": event.and_then(|e| e.get("invocationId")),
            "message": format!("the call ended {}; its result was not kept when the run stopped ({reason})", status.as_str())})
        }
    };
    Block::ToolResult {
        tool_use_id: id.to_string(),
        content: content.to_string(),
        is_error: state != CallState::Ended(ToolStatus::Succeeded),
    }
}
