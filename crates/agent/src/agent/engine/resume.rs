//! Taking a run over after a crash: the last answer in the session log has
//! tool calls without results. Each is settled through the ledger before
//! the loop goes on — a recorded result is reused, a call left running by a
//! dead process is settled by the capability's replay policy (for
//! `download.submit`, `verify` asks the plan and qBittorrent), and whatever
//! stays uncertain reaches the model as "result unknown — verify before
//! retrying". Session tools are cheap and are simply answered again.

use serde_json::Value;

use super::turn::RunState;
use super::{EngineError, toolbox};
use crate::agent::providers::{Block, ToolCall};
use crate::ledger::OWNER_LEASE;

/// Answers for the calls `pending` names, in order.
pub(super) async fn reconcile(
    state: &RunState<'_>,
    pending: &[(String, String, Value)],
) -> Result<Vec<Block>, EngineError> {
    let mut answers = Vec::new();
    for (id, name, input) in pending {
        let call = ToolCall { id: id.clone(), name: name.clone(), input: Ok(input.clone()) };
        if toolbox::is_session_tool(name) || input.get("invalid_arguments").is_some() {
            answers.push(
                toolbox::failed(
                    id,
                    "this call was interrupted by a restart and not answered; make it again if still needed",
                )
                .block,
            );
            continue;
        }
        let origin = state.caller().origin(id);
        if let Some(key) = state.rt.capabilities().idempotency_key_for(&origin, name, input) {
            // A live process may still be finishing it; a dead one's row is
            // settled by the replay policy once its heartbeat lapses.
            if let Err(e) = state.rt.services().ledger.await_unowned(&key, OWNER_LEASE * 3).await {
                tracing::warn!(call = %id, error = %e, "an inherited call is still owned elsewhere");
                let answered = unknown(id);
                state.event(&call, "reconciled", Some(&answered)).await;
                answers.push(answered.block);
                continue;
            }
        }
        tracing::info!(call = %id, capability = %name, "reconciling a call interrupted by a restart");
        let answered = state.invoke(&call, name, input).await?;
        state.commit_answer(&call, "reconciled", &answered).await?;
        answers.push(answered.block);
    }
    Ok(answers)
}

fn unknown(id: &str) -> toolbox::Answered {
    toolbox::Answered {
        block: Block::ToolResult {
            tool_use_id: id.to_string(),
            content: serde_json::json!({"status": "unknown", "message": toolbox::UNKNOWN_RESULT}).to_string(),
            is_error: true,
        },
        status: toolbox::ToolStatus::Unknown,
        invocation_id: None,
        replayed: false,
        audit_rows: Vec::new(),
        events: Vec::new(),
    }
}
