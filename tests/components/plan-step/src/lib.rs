//! Test component `test.plan-step` (label execute, tag `plan:acquisition`):
//! reserves the acquisition plan it is given through `records`, so the
//! suites can show a plan approval authorising exactly one automated call.

use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Input {
    /// The acquisition plan to reserve.
    pub plan_id: String,
}

pub struct PlanStep;

impl Capability for PlanStep {
    type Input = Input;
    type Output = Value;

    const META: Meta = Meta {
        id: "test.plan-step",
        version: 1,
        label: Label::Execute,
        summary: "Reserve an acquisition plan",
        description: "Test component: moves an acquisition plan from draft to reserved.",
        tags: &["test", "plan:acquisition"],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: Input) -> Result<Outcome<Value>, Failure> {
        let plan = domain::transition("plan.reserve", &json!({ "planId": input.plan_id }))
            .map_err(|e| Failure::Conflict(e.to_string()))?;
        Ok(Outcome::Succeeded(plan))
    }
}

capstan_sdk::export_capability!(PlanStep);
