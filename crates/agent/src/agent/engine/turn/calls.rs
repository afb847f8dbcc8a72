//! A tool call of the model's answer, answered: the session tools that need
//! the run, and capabilities through the one invoke path as the run's
//! caller — stopped where it stands when the run is aborted meanwhile —
//! with the `agent.tool_call` events the console and the report read.

use std::time::Duration;

use serde_json::{Value, json};

use super::{RunState, closed_reason};
use crate::agent::engine::EngineError;
use crate::agent::engine::toolbox::{self, Answered, RunCaller, ToolStatus};
use crate::agent::providers::{Block, ToolCall};
use crate::agent::runs::{Run, StepWrites};
use crate::agent::tools::discovery;
use crate::agent::tools::plan::UPDATE_PLAN;
use crate::agent::tools::skill_reads::{self, READ_SKILL, SkillRead};
use crate::runtime::{EffectClass, StopSignal};

/// How long a tool call may run before its start is committed on its own;
/// a quicker call's start is committed with its end.
const START_SHOWN: Duration = Duration::from_millis(20);

impl RunState<'_> {
    /// Answers one response's tool calls in order; `update_plan` calls are
    /// judged together. Returns the results, when a budget ran out why,
    /// and the run's row as the commit of the last call's end left it.
    pub(super) async fn answer_calls(
        &mut self,
        calls: &[ToolCall],
        mut pending: StepWrites,
    ) -> Result<(Vec<Block>, Option<String>, Option<Run>), EngineError> {
        let plan_calls: Vec<(&ToolCall, &Value)> = calls
            .iter()
            .filter(|c| c.name == UPDATE_PLAN)
            .filter_map(|c| c.input.as_ref().ok().map(|i| (c, i)))
            .collect();
        let (new_plan, plan_answers) = toolbox::answer_plan_calls(&plan_calls);
        let mut plan_answers = plan_answers.into_iter();
        if let Some(plan) = new_plan {
            self.record_plan(Some(plan)).await?;
        }
        let mut blocks = Vec::new();
        let mut over = None;
        // The row as read before this answer's first call or committed
        // since; `None` once a subagent may have spent.
        let mut known: Option<Run> = None;
        for call in calls {
            // A call that may act waits until the last step's results are
            // durable (a failed sync stops it), and what came before it
            // (the reads' audit rows among it) commits first, so the audit
            // log keeps the order things happened in.
            let acts = self.may_act(call);
            if acts {
                self.settle_log().await?;
                if !pending.is_empty() {
                    self.rt.runs.queue_step(&self.run_id, std::mem::take(&mut pending)).await?;
                }
            }
            // The run as it stands once what is pending is committed, read
            // fresh before the answer's first call (an abort while the model
            // answered stops them all) and before any call that may act.
            // Only this run's steps change its counts, so a later read call
            // goes by the known row.
            let mut run = match known.clone().filter(|_| !acts) {
                Some(run) => run,
                None => self.rt.runs.get(&self.run_id).await?,
            };
            known = Some(run.clone());
            pending.apply_to(&mut run);
            if let Some(reason) = closed_reason(&run) {
                // An abort stops the rest of the answer's calls, too.
                let message = if call.name == toolbox::DELEGATE {
                    format!("the session is closed ({reason}); no new subtasks")
                } else {
                    format!("not run: the session is closed ({reason})")
                };
                blocks.push(toolbox::failed(&call.id, message).block);
                continue;
            }
            if over.is_none() {
                over = self.limits.exceeded(&run, 1);
            }
            if let Some(reason) = &over {
                blocks.push(toolbox::failed(&call.id, format!("not run: {reason}")).block);
                continue;
            }
            // The call's start commits with what came before it: the
            // answer's cost, or the previous call's end. A call that ends
            // within START_SHOWN has its start committed with its end, one
            // commit instead of two; a longer one's start is committed
            // then, while it runs. A subagent, which reads the run's
            // spend, waits for the commit first.
            pending.events.push(("agent.tool_call", self.call_payload(call, "started", None)));
            let mut start = Some(std::mem::take(&mut pending));
            let mut started = None;
            if call.name == toolbox::DELEGATE {
                self.rt.runs.commit_step(&self.run_id, start.take().unwrap_or_default()).await?;
            }
            let mut answered = match &call.input {
                Err(e) => toolbox::failed(&call.id, format!("the call was not run: {e}")),
                Ok(_) if call.name == UPDATE_PLAN => {
                    plan_answers.next().unwrap_or_else(|| toolbox::failed(&call.id, "update_plan was not applied"))
                }
                Ok(input) => {
                    let (runs, run_id) = (self.rt.runs.clone(), self.run_id.clone());
                    let answering = self.answer_one(call, input);
                    tokio::pin!(answering);
                    let answered = tokio::select! {
                        answered = &mut answering => answered,
                        _ = tokio::time::sleep(START_SHOWN), if start.is_some() => {
                            started = start.take().map(|writes| runs.queue_step(&run_id, writes));
                            answering.await
                        }
                    };
                    // A call that failed still leaves what came before it
                    // (the answer's cost, earlier calls' ends) committed.
                    if answered.is_err()
                        && let Some(writes) = start.take()
                    {
                        let _ = runs.queue_step(&run_id, writes).await;
                    }
                    answered?
                }
            };
            match (start, started) {
                (Some(writes), _) => pending = writes,
                (None, Some(started)) => {
                    if let Some(row) = started.await? {
                        known = Some(row);
                    }
                }
                (None, None) => {}
            }
            if call.name == toolbox::DELEGATE {
                known = None;
            }
            let phase = match answered.status {
                ToolStatus::Denied if answered.is_rejected() => "rejected",
                ToolStatus::Denied => "denied",
                _ => "finished",
            };
            // What the call did (a skill read) comes before its end.
            pending.events.extend(std::mem::take(&mut answered.events));
            pending.events.push(("agent.tool_call", self.call_payload(call, phase, Some(&answered))));
            pending.calls_counted += 1;
            pending.audit_rows.extend(answered.audit_rows);
            blocks.push(answered.block);
        }
        // Committed before the results are written to the session log, so
        // the log never holds a result whose end (or read's audit row) the
        // database lacks.
        let run = self.rt.runs.queue_step(&self.run_id, pending).await?;
        Ok((blocks, over, run))
    }

    /// Whether `call` may change something outside the run or spend its
    /// budget: a capability above preview, or a subtask.
    fn may_act(&self, call: &ToolCall) -> bool {
        call.name == toolbox::DELEGATE
            || self
                .rt
                .svc
                .caps
                .runtime()
                .snapshot()
                .get(&call.name)
                .is_some_and(|l| l.descriptor.label > EffectClass::Preview)
    }

    pub(super) async fn answer_one(&mut self, call: &ToolCall, input: &Value) -> Result<Answered, EngineError> {
        if let Some(answered) =
            toolbox::read_command_output(call, input, &self.caller, self.rt.svc.caps.runtime()).await
        {
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
            READ_SKILL => Ok(self.read_skill(call, input)),
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
        if self.rt.svc.caps.runtime().snapshot().get(name).is_none() {
            return Ok(toolbox::failed(&call.id, format!("no tool named {name} is available")));
        }
        let origin = self.caller.origin(&call.id);
        // An abort while the call runs stops it where it stands; the
        // pipeline still records how it ended (unknown once an effect ran).
        let (stop_tx, stop) = StopSignal::channel();
        let invoking = self.rt.svc.caps.invoke_in_run(&origin, name, input, stop);
        tokio::pin!(invoking);
        let invoked = tokio::select! {
            invoked = &mut invoking => invoked,
            _ = self.watch_abort() => {
                let _ = stop_tx.send(true);
                invoking.await
            }
        };
        match invoked {
            Ok(mut inv) => {
                let mut answered = toolbox::from_invocation(&call.id, &self.caller, &inv, &self.rt.results);
                answered.audit_rows = inv.take_audit_rows();
                Ok(self.ask_for_approval(name, input, answered).await)
            }
            Err(source) => Err(EngineError::Invoke { capability: name.to_string(), source }),
        }
    }

    /// `read_skill`: the skill's instructions, its tools this run may call
    /// made discoverable, and the rest named with why they stay closed.
    fn read_skill(&mut self, call: &ToolCall, input: &Value) -> Answered {
        let Some(name) = input.get("name").and_then(Value::as_str) else {
            return toolbox::failed(&call.id, "read_skill needs a name");
        };
        let Some(skill) = self.skills.iter().find(|s| s.name == name).cloned() else {
            return toolbox::failed(&call.id, skill_reads::unknown(name, &self.skills));
        };
        let read = self.open_skill(skill);
        // Kept like a read's result: a long skill arrives as a preview the
        // model reads on with read_tool_result.
        let outside = crate::pipeline::Invocation::succeeded_outside(read.result());
        let mut answered = toolbox::from_invocation(&call.id, &self.caller, &outside, &self.rt.results);
        answered.events.push(("agent.skill_read", read.event(self.actor_name(), false)));
        answered.audit_rows.push(read.audit_row(self.actor_name(), &self.caller.principal(), &self.run_id));
        answered
    }

    /// Sorts `skill`'s tools by what this caller may call and makes the
    /// callable ones discoverable for the rest of the task.
    pub(super) fn open_skill(&mut self, skill: std::sync::Arc<crate::skills::Skill>) -> SkillRead {
        let read =
            crate::agent::engine::playbook::read(&self.rt.svc.caps, skill, &self.caller, self.allowlist.as_deref());
        self.discovery.enable(&read.callable);
        if self.limits.max_tools > 0 {
            self.note_discovery();
        }
        read
    }

    async fn tool_execution(&self, call: &ToolCall, input: &Value) -> Answered {
        let Some(id) = input.get("invocation_id").and_then(Value::as_str) else {
            return toolbox::failed(&call.id, "get_tool_execution needs an invocation_id");
        };
        match self.rt.svc.ledger.get(id, &crate::principal::agent(&self.run_id)).await {
            Ok(Some(r)) => {
                let value = json!({"invocation_id": r.id, "capability": r.capability_id, "status": r.status,
                    "result": r.result.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()), "error": r.error});
                toolbox::from_invocation(
                    &call.id,
                    &self.caller,
                    &crate::pipeline::Invocation::succeeded_outside(value),
                    &self.rt.results,
                )
            }
            Ok(None) => toolbox::failed(&call.id, format!("this run made no write call {id}")),
            Err(e) => toolbox::failed(&call.id, format!("cannot read the ledger: {e}")),
        }
    }

    pub(super) fn note_discovery(&mut self) {
        let used = discovery::estimate_tokens(&serde_json::to_string(&self.session.messages).unwrap_or_default());
        let selection = self.discovery.select(self.limits.context_budget, used);
        let mut note = format!("Tools enabled by your search or skill: {}.", list_or_none(&selection.enabled));
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

    /// Records how a call ended outside a step (one reconciled after a
    /// restart): its event and the audit rows of the read it made, in one
    /// commit that must succeed before the model sees the result.
    pub(in crate::agent::engine) async fn commit_answer(
        &self,
        call: &ToolCall,
        phase: &str,
        answered: &Answered,
    ) -> Result<(), EngineError> {
        let mut events = answered.events.clone();
        events.push(("agent.tool_call", self.call_payload(call, phase, Some(answered))));
        let writes = StepWrites { events, audit_rows: answered.audit_rows.clone(), ..StepWrites::default() };
        Ok(self.rt.runs.commit_step(&self.run_id, writes).await?)
    }

    pub(in crate::agent::engine) fn caller(&self) -> &RunCaller {
        &self.caller
    }
}

pub(super) fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}
