//! A tool call of the model's answer, answered: the session tools that need
//! the run, and capabilities through the one invoke path as the run's
//! caller — stopped where it stands when the run is aborted meanwhile —
//! with the `agent.tool_call` events the console and the report read.

use serde_json::{Value, json};

use super::RunState;
use crate::agent::engine::EngineError;
use crate::agent::engine::toolbox::{self, Answered, RunCaller};
use crate::agent::providers::ToolCall;
use crate::agent::tools::discovery;
use crate::runtime::StopSignal;

impl RunState<'_> {
    pub(super) async fn answer_one(&mut self, call: &ToolCall, input: &Value) -> Result<Answered, EngineError> {
        if let Some(answered) = toolbox::read_command_output(call, input, &self.caller, self.rt.caps.runtime()).await {
            return Ok(answered);
        }
        if let Some(answered) = toolbox::answer_local(call, input, &self.caller, &mut self.discovery, &self.rt.results)
        {
            if call.name == toolbox::SEARCH_TOOLS {
                self.note_discovery();
            }
            return Ok(answered);
        }
        match call.name.as_str() {
            toolbox::GET_TOOL_EXECUTION => Ok(self.tool_execution(call, input).await),
            toolbox::DELEGATE => Ok(self.delegate(call, input).await),
            name => self.invoke(call, name, input).await,
        }
    }

    /// A capability call through the one invoke path.
    pub(in crate::agent::engine) async fn invoke(
        &self,
        call: &ToolCall,
        name: &str,
        input: &Value,
    ) -> Result<Answered, EngineError> {
        // Outside the allowlist is refused by name, loaded or not: a bounded
        // run is told what it may call, never probed for what exists.
        if let Some(allowed) = self.allowlist.as_ref().filter(|a| !a.iter().any(|id| id == name)) {
            return Ok(toolbox::rejected(&call.id, name, allowed));
        }
        if self.rt.caps.runtime().snapshot().get(name).is_none() {
            return Ok(toolbox::failed(&call.id, format!("no tool named {name} is available")));
        }
        let origin = self.caller.origin(&call.id);
        // An abort while the call runs stops it where it stands; the
        // pipeline still records how it ended (unknown once an effect ran).
        let (stop_tx, stop) = StopSignal::channel();
        let invoking = self.rt.caps.invoke_stoppable(&origin, name, input, stop);
        tokio::pin!(invoking);
        let invoked = tokio::select! {
            invoked = &mut invoking => invoked,
            _ = self.watch_abort() => {
                let _ = stop_tx.send(true);
                invoking.await
            }
        };
        match invoked {
            Ok(inv) => {
                let answered = toolbox::from_invocation(&call.id, &self.caller, &inv, &self.rt.results);
                Ok(self.ask_for_approval(name, input, answered).await)
            }
            Err(source) => Err(EngineError::Invoke { capability: name.to_string(), source }),
        }
    }

    async fn tool_execution(&self, call: &ToolCall, input: &Value) -> Answered {
        let Some(id) = input.get("invocation_id").and_then(Value::as_str) else {
            return toolbox::failed(&call.id, "get_tool_execution needs an invocation_id");
        };
        match self.rt.caps.ledger().get(id, &crate::principal::agent(&self.run_id)).await {
            Ok(Some(r)) => {
                let value = json!({"invocation_id": r.id, "capability": r.capability_id, "status": r.status,
                    "result": r.result.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()), "error": r.error});
                toolbox::from_invocation(&call.id, &self.caller, &succeeded_with(value), &self.rt.results)
            }
            Ok(None) => toolbox::failed(&call.id, format!("this run made no write call {id}")),
            Err(e) => toolbox::failed(&call.id, format!("cannot read the ledger: {e}")),
        }
    }

    pub(super) fn note_discovery(&mut self) {
        let used = discovery::estimate_tokens(&serde_json::to_string(&self.session.messages).unwrap_or_default());
        let selection = self.discovery.select(self.limits.context_budget, used);
        let mut note = format!("Tools enabled by your search: {}.", list_or_none(&selection.enabled));
        for (name, reason) in &selection.left_out {
            note.push_str(&format!(" {name} was not enabled: {reason}."));
        }
        self.discovery_note = Some(note);
    }

    pub(super) fn call_payload(&self, call: &ToolCall, phase: &str, answered: Option<&Answered>) -> Value {
        let mut payload = json!({"toolCallId": call.id, "name": call.name, "phase": phase, "actor": self.actor_name(),
            "turn": self.caller.turn});
        if phase == "started" {
            payload["input"] = Value::from(toolbox::input_summary(call));
        }
        if let Some(a) = answered {
            payload["status"] = Value::from(a.status.as_str());
            payload["invocationId"] = json!(a.invocation_id);
            payload["replayed"] = Value::from(a.replayed);
            if let Some(error) = a.error_text() {
                payload["error"] = Value::from(error);
            }
        }
        payload
    }

    pub(in crate::agent::engine) async fn event(&self, call: &ToolCall, phase: &str, answered: Option<&Answered>) {
        let payload = self.call_payload(call, phase, answered);
        if let Err(e) = self.rt.runs.append_event(&self.run_id, "agent.tool_call", &payload).await {
            tracing::warn!(run = %self.run_id, error = %e, "could not record a tool-call event");
        }
    }

    pub(in crate::agent::engine) fn caller(&self) -> &RunCaller {
        &self.caller
    }
}

pub(super) fn succeeded_with(output: Value) -> crate::pipeline::Invocation {
    crate::pipeline::Invocation {
        invocation_id: None,
        status: crate::runtime::Status::Succeeded,
        output: Some(output),
        error: None,
        replayed: false,
        idempotency_key: String::new(),
        denials: Vec::new(),
        finish: None,
    }
}

pub(super) fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}
