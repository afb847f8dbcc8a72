//! `update_plan`: the model's own notes on how it will reach the goal — a
//! goal and steps that are `pending`, `in_progress`, `completed` or
//! `blocked`. A completed or blocked step must say why (evidence), at most
//! one step is in progress, and two `update_plan` calls in one model
//! response are both refused, so the plan never depends on call order. The
//! plan lives in the run's state, not in the messages, and is shown to the
//! model on every request. It is notes, not proof: reports are built from
//! the business tables, never from the plan.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::providers::ToolSpec;

/// The session tool's name.
pub(crate) const UPDATE_PLAN: &str = "update_plan";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
    Blocked,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub title: String,
    pub status: StepStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepPlan {
    pub goal: String,
    pub steps: Vec<Step>,
}

/// What the model sees of the tool.
pub fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: UPDATE_PLAN.into(),
        description: "Replace your plan for this task: the goal and its steps. Mark a step completed or blocked \
                      only with evidence (what you saw that shows it). Call it at most once per response."
            .into(),
        input_schema: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["goal", "steps"],
            "properties": {
                "goal": { "type": "string", "minLength": 1 },
                "steps": { "type": "array", "maxItems": 30, "items": {
                    "type": "object", "additionalProperties": false, "required": ["title", "status"],
                    "properties": {
                        "title": { "type": "string", "minLength": 1 },
                        "status": { "enum": ["pending", "in_progress", "completed", "blocked"] },
                        "evidence": { "type": "string" }
                    }
                }}
            }
        }),
    }
}

/// Checks one proposed plan.
pub fn validate(input: &Value) -> Result<StepPlan, String> {
    let plan: StepPlan = serde_json::from_value(input.clone()).map_err(|e| format!("update_plan: {e}"))?;
    if plan.goal.trim().is_empty() {
        return Err("update_plan: the goal must not be empty".into());
    }
    if plan.steps.len() > 30 {
        return Err("update_plan: at most 30 steps".into());
    }
    for (i, step) in plan.steps.iter().enumerate() {
        if step.title.trim().is_empty() {
            return Err(format!("update_plan: step {} has no title", i + 1));
        }
        let needs_evidence = matches!(step.status, StepStatus::Completed | StepStatus::Blocked);
        if needs_evidence && step.evidence.as_deref().is_none_or(|e| e.trim().is_empty()) {
            return Err(format!(
                "update_plan: step {} ({:?}) is {:?} without evidence; say what shows it",
                i + 1,
                step.title,
                step.status
            ));
        }
    }
    if plan.steps.iter().filter(|s| s.status == StepStatus::InProgress).count() > 1 {
        return Err("update_plan: only one step can be in progress".into());
    }
    Ok(plan)
}

/// Applies the `update_plan` calls of one model response: the new plan (if
/// exactly one valid call), and one result text per call in order.
pub fn apply(inputs: &[&Value]) -> (Option<StepPlan>, Vec<Result<String, String>>) {
    if inputs.len() > 1 {
        let refusal =
            format!("update_plan was called {} times in one response; none was applied — call it once", inputs.len());
        return (None, inputs.iter().map(|_| Err(refusal.clone())).collect());
    }
    match inputs.first().map(|i| validate(i)) {
        None => (None, Vec::new()),
        Some(Ok(plan)) => (Some(plan), vec![Ok("plan updated".into())]),
        Some(Err(e)) => (None, vec![Err(e)]),
    }
}

/// The plan as it is shown to the model on every request.
pub fn render(plan: &StepPlan) -> String {
    let mut out = format!("Current plan — goal: {}\n", plan.goal);
    for (i, step) in plan.steps.iter().enumerate() {
        let mark = match step.status {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[>]",
            StepStatus::Completed => "[x]",
            StepStatus::Blocked => "[!]",
        };
        out.push_str(&format!("{}. {mark} {}", i + 1, step.title));
        if let Some(e) = &step.evidence {
            out.push_str(&format!(" — {e}"));
        }
        out.push('\n');
    }
    out
}
