//! What a run lets go of when it stops short — cancelled, failed or over
//! budget: the tool calls of the model's last answer, each as it stands.
//! A call with a result keeps its status; one that had started and has no
//! result is `result_unknown` (never "not run": it may have done its
//! work); one that never started is `not_run`. The snapshot is published
//! as an `agent.snapshot` event with the plan and the calls' inputs
//! redacted to field names, types and sizes. Calls a crash or an error left
//! without a result are closed in the session log in those words, so the
//! conversation can go on from there. Nothing is run or replayed here.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{AgentRuntime, EngineError};
use crate::agent::providers::{Block, Role};
use crate::agent::session_log::{Entry, SessionLog};
use crate::audit::summarize_input;

/// How a call of the last answer stands when the run stops.
fn state_of(event: Option<&Value>) -> String {
    match event {
        None => "not_run".into(),
        Some(e) => match (e["phase"].as_str(), e["status"].as_str()) {
            (Some("started"), _) | (_, Some("unknown")) | (_, None) => "result_unknown".into(),
            (_, Some(status)) => status.to_string(),
        },
    }
}

/// Takes the snapshot of run `run_id`, which stops for `reason`.
pub(super) async fn take(rt: &AgentRuntime, run_id: &str, reason: &str) -> Result<(), EngineError> {
    let (mut log, session) = SessionLog::open(&rt.session_dir, run_id)?;
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
        let state = state_of(event);
        if session.pending_calls().iter().any(|(pending, _, _)| pending == *id) {
            closing.push(close(id, &state, reason, event));
        }
        shown.push(json!({"toolCallId": id, "name": name, "state": state, "input": summarize_input(input)}));
    }
    if !closing.is_empty() {
        log.append(&Entry::ToolResults { content: closing }).await?;
    }
    let payload = json!({"reason": reason, "turn": turn, "plan": session.plan, "calls": shown});
    rt.runs.append_event(run_id, "agent.snapshot", &payload).await?;
    Ok(())
}

/// The result a call left without one gets when the run stops.
fn close(id: &str, state: &str, reason: &str, event: Option<&Value>) -> Block {
    let content = match state {
        "not_run" => {
            json!({"status": "failed", "error": format!("not run: the run stopped ({reason}) before this call started")})
        }
        "result_unknown" => json!({"status": "unknown", "message": format!(
            "result unknown: the run stopped ({reason}) while this call was running; check before repeating it")}),
        status => json!({"status": status, "invocation_id": event.and_then(|e| e.get("invocationId")),
            "message": format!("the call ended {status}; its result was not kept when the run stopped ({reason})")}),
    };
    Block::ToolResult { tool_use_id: id.to_string(), content: content.to_string(), is_error: state != "succeeded" }
}
