//! `delegate`: a subagent answers a subtask. It runs the same loop as its
//! parent but as a subagent — the mode gate and its grant let it read and
//! preview only, whatever the parent holds — with the parent's budget, token
//! counter and compaction, and without a session log of its own (a
//! delegated read is safe to run again after a restart). It ends within the
//! parent's turn: after a bounded number of requests it is reclaimed.

use serde_json::{Value, json};

use super::{RunState, TurnOutcome};
use crate::agent::engine::toolbox::{self, Answered, RunCaller};
use crate::agent::providers::{Role, ToolCall};
use crate::agent::session_log::{Entry, SessionState};
use crate::agent::tokens::TokenCount;
use crate::agent::tools::discovery::Discovery;
use crate::runtime::Actor;
use crate::store::new_id;

/// The most model requests a subagent makes before it is reclaimed.
const SUBAGENT_STEPS: usize = 8;

impl RunState<'_> {
    /// `delegate`: a read-only subagent answers a subtask with the run's
    /// budget; it ends within the turn or is reclaimed.
    pub(super) async fn delegate(&self, call: &ToolCall, input: &Value) -> Answered {
        if self.caller.actor == Actor::Subagent {
            return toolbox::failed(&call.id, "a subagent cannot delegate");
        }
        if let Some(reason) = self.abort_reason().await {
            return toolbox::failed(&call.id, format!("the session is closed ({reason}); no new subtasks"));
        }
        let goal = input.get("goal").and_then(Value::as_str).unwrap_or_default();
        let context = input.get("context").and_then(Value::as_str).unwrap_or_default();
        let text = if context.is_empty() { goal.to_string() } else { format!("{goal}\n\nContext: {context}") };
        let mut sub = RunState {
            rt: self.rt,
            run_id: self.run_id.clone(),
            allowlist: self.allowlist.clone(),
            caller: RunCaller {
                run_id: self.run_id.clone(),
                actor: Actor::Subagent,
                mode: self.caller.mode,
                request_id: new_id(),
                turn: 0,
            },
            provider: self.provider.clone(),
            limits: self.limits,
            counter: self.counter.clone(),
            log: None,
            session: SessionState::default(),
            discovery: Discovery::new(toolbox::catalog(
                &self.rt.svc.caps,
                Actor::Subagent,
                self.caller.mode,
                self.allowlist.as_deref(),
            )),
            discovery_note: None,
            skills: self.skills.clone(),
            skills_listing: self.skills_listing.clone(),
            started_with: None,
            final_text: String::new(),
            empty_answers: 0,
            committed_run: None,
            measured: TokenCount::default(),
            offered: (Vec::new(), std::sync::Arc::from([])),
        };
        let request_id = sub.caller.request_id.clone();
        sub.session.apply(&Entry::Request { request_id, message_seq: 0, text, continues: false, note: None });
        for _ in 0..SUBAGENT_STEPS {
            let run = match self.rt.runs.get(&self.run_id).await {
                Ok(run) => run,
                Err(e) => return toolbox::failed(&call.id, format!("the subagent failed: {e}")),
            };
            match Box::pin(sub.step(&run)).await {
                Ok(TurnOutcome::Idle) if sub.session.messages.last().is_some_and(|m| m.role == Role::Assistant) => {
                    // The findings are the parent's to keep and read.
                    return toolbox::from_invocation(
                        &call.id,
                        &self.caller,
                        &crate::pipeline::Invocation::succeeded_outside(json!({"findings": sub.final_text})),
                        &self.rt.results,
                    );
                }
                Ok(TurnOutcome::Idle) => continue,
                Ok(other) => return toolbox::failed(&call.id, format!("the subagent stopped: {other:?}")),
                Err(e) => return toolbox::failed(&call.id, format!("the subagent failed: {e}")),
            }
        }
        toolbox::failed(
            &call.id,
            format!("the subagent did not finish within {SUBAGENT_STEPS} steps and was reclaimed"),
        )
    }
}
