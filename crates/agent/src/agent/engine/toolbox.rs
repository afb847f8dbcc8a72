//! What a run may call and how each call is answered. Capabilities come
//! from the registry, filtered by the run's mode and allowlist, and are
//! called only through `Capabilities::invoke` with an agent (or subagent)
//! origin naming the run, the user request and the tool call. Session tools
//! (`update_plan`, `search_tools`, `read_skill`, `read_tool_result`,
//! `get_tool_execution`, `delegate`) are answered by the loop and never
//! published as capabilities.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::agent::providers::{Block, ToolCall, ToolSpec};
use crate::agent::tools::discovery::{self, Discovery};
use crate::agent::tools::plan::{self, StepPlan, UPDATE_PLAN};
use crate::agent::tools::results::{Holder, PREVIEW_CHARS, ResultStore, Shown};
use crate::agent::tools::skill_reads::{self, READ_SKILL};
use crate::audit::NewAuditEntry;
use crate::ledger::LedgerStatus;
use crate::pipeline::{Capabilities, Invocation, Origin};
use crate::runtime::{Actor, Descriptor, EffectClass, Loaded, Mode, Status};

pub(crate) const SEARCH_TOOLS: &str = "search_tools";
pub(crate) const READ_TOOL_RESULT: &str = "read_tool_result";
pub(crate) const GET_TOOL_EXECUTION: &str = "get_tool_execution";
pub(crate) const DELEGATE: &str = "delegate";

/// Who a run's tool calls are made as: the agent of the run, or a subagent.
#[derive(Debug, Clone)]
pub(crate) struct RunCaller {
    pub run_id: String,
    pub actor: Actor,
    pub mode: Mode,
    /// The task being worked on: the idempotency scope of its writes.
    pub request_id: String,
    /// The seq of the message being answered (the turn), which keeps tool
    /// call ids apart when a model reuses them from one turn to the next.
    pub turn: i64,
}

impl RunCaller {
    /// Who keeps this caller's large results, and may read them back.
    pub fn holder(&self) -> Holder {
        let class = match (self.actor, self.mode) {
            (Actor::Subagent, _) => EffectClass::Read,
            (_, Mode::PlanOnly) => EffectClass::Propose,
            _ => EffectClass::Execute,
        };
        Holder { principal: self.principal(), class }
    }

    pub fn principal(&self) -> String {
        match self.actor {
            Actor::Subagent => crate::principal::subagent(&self.run_id),
            _ => crate::principal::agent(&self.run_id),
        }
    }

    /// The origin of one tool call; the call id is made unique per turn so
    /// a model that reuses ids from one turn to the next is not confused
    /// with itself.
    pub fn origin(&self, call_id: &str) -> Origin {
        Origin {
            actor: self.actor,
            principal: self.principal(),
            run_id: Some(self.run_id.clone()),
            task_id: None,
            tool_call_id: Some(format!("{}/m{}/{call_id}", self.request_id, self.turn)),
            request_id: self.request_id.clone(),
            mode: self.mode,
            ceiling: EffectClass::Execute,
        }
    }
}

/// The capabilities a run may see: its mode's ceiling and its allowlist.
pub fn catalog(caps: &Capabilities, actor: Actor, mode: Mode, allowlist: Option<&[String]>) -> Vec<Descriptor> {
    offered(caps, actor, mode, allowlist).iter().map(|l| l.descriptor.clone()).collect()
}

/// The highest label a caller of `actor` in `mode` may call.
fn ceiling(actor: Actor, mode: Mode) -> EffectClass {
    match (actor, mode) {
        (Actor::Subagent, _) => EffectClass::Preview,
        (_, Mode::PlanOnly) => EffectClass::Propose,
        _ => EffectClass::Execute,
    }
}

/// Why a run's caller may not call `tool` at all (`None`: it may): not
/// loaded, above the mode's ceiling, or outside the allowlist. What the
/// caller's grants allow is judged when it calls.
pub(crate) fn why_closed(
    caps: &Capabilities,
    caller: &RunCaller,
    allowlist: Option<&[String]>,
    tool: &str,
) -> Option<String> {
    let snapshot = caps.runtime().snapshot();
    let Some(loaded) = snapshot.get(tool) else {
        return Some("it is not loaded now".into());
    };
    let label = loaded.descriptor.label;
    let ceiling = ceiling(caller.actor, caller.mode);
    if label > ceiling {
        let who = match (caller.actor, caller.mode) {
            (Actor::Subagent, _) => "a subagent may only read and preview",
            (_, Mode::PlanOnly) => "a plan-only run stops at propose",
            _ => "this run may not call it",
        };
        return Some(format!("it is labelled {label}, and {who}"));
    }
    if allowlist.is_some_and(|a| !a.iter().any(|id| id == tool)) {
        return Some("it is outside this run's allowlist".into());
    }
    None
}

/// [`catalog`]'s entries as loaded, not copied: what a step offers the
/// model is chosen from them every step.
pub fn offered(caps: &Capabilities, actor: Actor, mode: Mode, allowlist: Option<&[String]>) -> Vec<Arc<Loaded>> {
    let ceiling = ceiling(actor, mode);
    caps.runtime()
        .snapshot()
        .active
        .values()
        .filter(|l| l.descriptor.label <= ceiling)
        .filter(|l| allowlist.is_none_or(|a| a.iter().any(|id| id == &l.descriptor.id)))
        .cloned()
        .collect()
}

/// The session tools on offer (`delegate` only to a top-level run).
pub(crate) fn session_specs(actor: Actor) -> Vec<ToolSpec> {
    let mut specs = vec![
        plan::tool_spec(),
        ToolSpec {
            name: SEARCH_TOOLS.into(),
            description:
                "Find more tools by name, alias, tag or description; found tools are enabled on the next request."
                    .into(),
            input_schema: json!({"type": "object", "required": ["search"], "properties": {
                "search": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 8}}}),
        },
        skill_reads::tool_spec(),
        ToolSpec {
            name: READ_TOOL_RESULT.into(),
            description: "Read more of a large tool result by result_id, in Unicode characters; a command's \
                          output_file or handle reads its archived output, in bytes."
                .into(),
            input_schema: json!({"type": "object", "required": ["result_id"], "properties": {
                "result_id": {"type": "string"}, "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1}}}),
        },
        ToolSpec {
            name: GET_TOOL_EXECUTION.into(),
            description: "The recorded status and result of an earlier write call of this run, by invocation_id."
                .into(),
            input_schema: json!({"type": "object", "required": ["invocation_id"], "properties": {
                "invocation_id": {"type": "string"}}}),
        },
    ];
    if actor != Actor::Subagent {
        specs.push(ToolSpec {
            name: DELEGATE.into(),
            description: "Hand a read-only subtask to a subagent; it may read and preview, never change anything, and answers with its findings.".into(),
            input_schema: json!({"type": "object", "required": ["goal"], "properties": {
                "goal": {"type": "string", "minLength": 1}, "context": {"type": "string"}}}),
        });
    }
    specs
}

pub(crate) fn is_session_tool(name: &str) -> bool {
    [UPDATE_PLAN, SEARCH_TOOLS, READ_SKILL, READ_TOOL_RESULT, GET_TOOL_EXECUTION, DELEGATE].contains(&name)
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Succeeded,
    Failed,
    /// Accepted async work, not done.
    Pending,
    /// An effect may have happened and nobody can tell.
    Unknown,
    /// Refused by the mode gate, authorisation or the sandbox.
    Denied,
}

impl ToolStatus {
    /// The word the model, the run's events and the report use.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Succeeded => "succeeded",
            ToolStatus::Failed => "failed",
            ToolStatus::Pending => "pending",
            ToolStatus::Unknown => "unknown",
            ToolStatus::Denied => "denied",
        }
    }

    /// Reads the word [`ToolStatus::as_str`] gives (a run event's `status`).
    pub fn parse(word: &str) -> Option<ToolStatus> {
        [ToolStatus::Succeeded, ToolStatus::Failed, ToolStatus::Pending, ToolStatus::Unknown, ToolStatus::Denied]
            .into_iter()
            .find(|s| s.as_str() == word)
    }

    /// How a write ended as its ledger row says now; `None` while it runs.
    pub(crate) fn of_ledger(status: LedgerStatus) -> Option<ToolStatus> {
        match status {
            LedgerStatus::Running => None,
            LedgerStatus::Succeeded => Some(ToolStatus::Succeeded),
            LedgerStatus::Failed => Some(ToolStatus::Failed),
            LedgerStatus::Pending => Some(ToolStatus::Pending),
            LedgerStatus::Unknown => Some(ToolStatus::Unknown),
        }
    }

    /// Whether the call did what it was asked (or accepted doing it).
    pub(crate) fn went_through(self) -> bool {
        matches!(self, ToolStatus::Succeeded | ToolStatus::Pending)
    }
}

/// How a tool call ended, as the run's events and report tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub block: Block,
    pub status: ToolStatus,
    pub invocation_id: Option<String>,
    pub replayed: bool,
    /// The audit rows of a read the call made, not yet written: they
    /// commit with the step's writes, before the model sees the result.
    pub audit_rows: Vec<NewAuditEntry>,
    /// Run events the call adds beside its `agent.tool_call` (a skill
    /// read's `agent.skill_read`), committed with them.
    pub events: Vec<(&'static str, Value)>,
}

impl Answered {
    /// Whether the call was refused because the run's allowlist does not
    /// name its tool.
    pub(crate) fn is_rejected(&self) -> bool {
        let Block::ToolResult { content, .. } = &self.block else { return false };
        self.status == ToolStatus::Denied
            && serde_json::from_str::<Value>(content).is_ok_and(|v| v["error"]["kind"] == TOOL_CALL_REJECTED)
    }

    /// Why a call that did not succeed did not, in a line (for events and
    /// the report's reasons).
    pub fn error_text(&self) -> Option<String> {
        if self.status.went_through() {
            return None;
        }
        let Block::ToolResult { content, .. } = &self.block else { return None };
        let value: Value = serde_json::from_str(content).ok()?;
        let text = match &value["error"] {
            Value::String(s) => s.clone(),
            Value::Object(e) => e.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
            _ => value["message"].as_str()?.to_string(),
        };
        let text: String = text.chars().take(300).collect();
        (!text.is_empty()).then_some(text)
    }
}

fn answer(call_id: &str, status: ToolStatus, content: String) -> Answered {
    let is_error = !status.went_through();
    Answered {
        block: Block::ToolResult { tool_use_id: call_id.to_string(), content, is_error },
        status,
        invocation_id: None,
        replayed: false,
        audit_rows: Vec::new(),
        events: Vec::new(),
    }
}

/// The error kind of a call refused because the run's allowlist does not
/// name its tool: it was never run, whatever the tool is.
pub(crate) const TOOL_CALL_REJECTED: &str = "tool_call_rejected";

/// The answer to a call of `name`, which the run's allowlist (`allowed`)
/// does not name.
pub fn rejected(call_id: &str, name: &str, allowed: &[String]) -> Answered {
    let message = format!(
        "{name} is outside this run's allowlist, so it was not run; this run may call {}",
        if allowed.is_empty() { "no capability".to_string() } else { allowed.join(", ") }
    );
    let error = json!({"kind": TOOL_CALL_REJECTED, "message": message});
    answer(call_id, ToolStatus::Denied, json!({"status": "denied", "error": error}).to_string())
}

pub fn failed(call_id: &str, message: impl Into<String>) -> Answered {
    answer(call_id, ToolStatus::Failed, json!({"status": "failed", "error": message.into()}).to_string())
}

/// The words a model sees for a call whose outcome nobody knows.
pub(crate) const UNKNOWN_RESULT: &str = "result unknown — verify before retrying";

/// Turns an invocation into the tool result the model sees. A successful
/// result's content is its output (large ones previewed and kept for
/// `read_tool_result`).
pub(crate) fn from_invocation(call_id: &str, caller: &RunCaller, inv: &Invocation, results: &ResultStore) -> Answered {
    let denied = inv.error.as_ref().is_some_and(|e| e.kind == "denied");
    let mut answered = match inv.status {
        Status::Succeeded => {
            let text = inv.output.as_ref().map(Value::to_string).unwrap_or_else(|| "null".into());
            let id = &inv.invocation_id;
            // A read's result is its output; a write's says which ledger
            // row holds it, for get_tool_execution.
            let shown = match results.keep(&caller.run_id, &caller.holder(), &text) {
                Shown::Whole { text } if id.is_none() => text,
                Shown::Whole { .. } => json!({"status": "succeeded", "invocation_id": id, "output": inv.output}).to_string(),
                Shown::Preview { text, result_id, next_offset, total_chars } => json!({
                    "preview": text, "result_id": result_id, "next_offset": next_offset, "total_chars": total_chars,
                    "invocation_id": id, "note": "the result is longer than this preview; read on with read_tool_result"}).to_string(),
                Shown::TooLarge { message } => json!({"status": "succeeded", "invocation_id": id, "note": message}).to_string(),
            };
            answer(call_id, ToolStatus::Succeeded, shown)
        }
        Status::Pending => {
            answer(call_id, ToolStatus::Pending, json!({"status": "pending", "output": inv.output}).to_string())
        }
        Status::Unknown => answer(
            call_id,
            ToolStatus::Unknown,
            json!({"status": "unknown", "message": UNKNOWN_RESULT, "invocation_id": inv.invocation_id}).to_string(),
        ),
        Status::Failed if denied => {
            answer(call_id, ToolStatus::Denied, json!({"status": "denied", "error": inv.error}).to_string())
        }
        Status::Failed => {
            answer(call_id, ToolStatus::Failed, json!({"status": "failed", "error": inv.error}).to_string())
        }
    };
    answered.invocation_id = inv.invocation_id.clone();
    answered.replayed = inv.replayed;
    answered
}

/// Answers the session tools that need only the run's in-memory state.
/// Returns `None` for names that are not such tools.
pub(crate) fn answer_local(
    call: &ToolCall,
    input: &Value,
    caller: &RunCaller,
    discovery: &mut Discovery,
    results: &ResultStore,
) -> Option<Answered> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let number = |v: &Value, k: &str, d: usize| v.get(k).and_then(Value::as_u64).map_or(d, |n| n as usize);
    Some(match call.name.as_str() {
        SEARCH_TOOLS => match text(input, "search") {
            Some(search) => {
                let found = discovery.search(&search, number(input, "limit", discovery::MAX_RESULTS));
                answer(&call.id, ToolStatus::Succeeded, json!({"found": found, "note": "found tools are enabled on the next request, within the schema budget"}).to_string())
            }
            None => failed(&call.id, "search_tools needs a search text"),
        },
        READ_TOOL_RESULT => match text(input, "result_id") {
            Some(id) => match results.read(
                &caller.run_id,
                &caller.holder(),
                &id,
                number(input, "offset", 0),
                number(input, "limit", PREVIEW_CHARS),
            ) {
                Ok(page) => answer(&call.id, ToolStatus::Succeeded, serde_json::to_string(&page).unwrap_or_default()),
                Err(e) => failed(&call.id, e),
            },
            None => failed(&call.id, "read_tool_result needs a result_id"),
        },
        _ => return None,
    })
}

/// `read_tool_result` of a command's whole output: `result_id` is the
/// `output_file` (or `handle`) a `system.command` result named, readable by
/// the run that started it (its subagents included) while the handle
/// lives; offsets count bytes. `None` when the id names no command of the
/// run, so the result store answers.
pub(crate) async fn read_command_output(
    call: &ToolCall,
    input: &Value,
    caller: &RunCaller,
    runtime: &crate::runtime::Runtime,
) -> Option<Answered> {
    if call.name != READ_TOOL_RESULT {
        return None;
    }
    let id = input.get("result_id").and_then(Value::as_str).filter(|id| id.starts_with("cmd_"))?;
    let offset = input.get("offset").and_then(Value::as_u64).unwrap_or(0);
    // Pages as long as the result store's.
    let limit = input
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(PREVIEW_CHARS, |n| n.clamp(1, 4 * PREVIEW_CHARS as u64) as usize);
    let owner = crate::runtime::host::run_owner(&caller.run_id);
    Some(match runtime.command_output(&owner, id, offset, limit).await? {
        Ok((bytes, total)) => {
            // A page ends on a whole character; the next one starts there.
            let whole = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => e.valid_up_to(),
                Err(_) => bytes.len(),
            };
            let text = String::from_utf8_lossy(&bytes[..whole]).into_owned();
            let next = offset + whole as u64;
            let next_offset = (next < total).then_some(next);
            let page = json!({"text": text, "next_offset": next_offset, "total_bytes": total});
            answer(&call.id, ToolStatus::Succeeded, page.to_string())
        }
        Err(e) => failed(&call.id, e),
    })
}

/// Applies the `update_plan` calls of one response: the new plan when
/// exactly one valid call was made, and an answer for each call.
pub(crate) fn answer_plan_calls(calls: &[(&ToolCall, &Value)]) -> (Option<StepPlan>, Vec<Answered>) {
    let inputs: Vec<&Value> = calls.iter().map(|(_, v)| *v).collect();
    let (plan, outcomes) = plan::apply(&inputs);
    let answers = calls
        .iter()
        .zip(outcomes)
        .map(|((call, _), outcome)| match outcome {
            Ok(text) => {
                answer(&call.id, ToolStatus::Succeeded, json!({"status": "succeeded", "message": text}).to_string())
            }
            Err(e) => failed(&call.id, e),
        })
        .collect();
    (plan, answers)
}

/// A call's arguments in a line, for the run's events (the console shows
/// them beside each call): compact JSON, cut at 200 characters.
pub fn input_summary(call: &crate::agent::providers::ToolCall) -> String {
    let text = match &call.input {
        Ok(v) => v.to_string(),
        Err(e) => format!("(arguments not valid: {e})"),
    };
    if text.chars().count() > 200 { format!("{}…", text.chars().take(200).collect::<String>()) } else { text }
}
