//! Test component `test.plan-step` (label execute, tag `plan:acquisition`):
//! reserves the acquisition plan it is given through `records`, so the
//! suites can show a plan approval authorising exactly one automated call.
//! Given an organization instead, it starts it and, when asked, keeps
//! running until its deadline stops it: a call still holding the
//! organization while another call tries to carry it out.

use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Input {
    /// The acquisition plan to reserve.
    #[serde(default)]
    pub plan_id: Option<String>,
    /// An organization to start (`organization.start`) instead.
    #[serde(default)]
    pub start_organization: Option<StartOrganization>,
    /// After starting the organization, spin until the deadline.
    #[serde(default)]
    pub then_spin: bool,
    /// An organization to finish (`organization.finish`) instead.
    #[serde(default)]
    pub finish_organization: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartOrganization {
    pub id: String,
    pub fingerprint: String,
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
        if let Some(org) = input.start_organization {
            let started =
                domain::transition("organization.start", &json!({ "id": org.id, "fingerprint": org.fingerprint }))?;
            if input.then_spin {
                loop {
                    std::hint::black_box(&started);
                }
            }
            return Ok(Outcome::Succeeded(started));
        }
        if let Some(id) = input.finish_organization {
            let finished = domain::transition("organization.finish", &json!({ "id": id }))?;
            return Ok(Outcome::Succeeded(finished));
        }
        let plan_id = input
            .plan_id
            .ok_or_else(|| Failure::InvalidInput("planId, startOrganization or finishOrganization".into()))?;
        let plan = domain::transition("plan.reserve", &json!({ "planId": plan_id }))
            .map_err(|e| Failure::Conflict(e.to_string()))?;
        Ok(Outcome::Succeeded(plan))
    }
}

capstan_sdk::export_capability!(PlanStep);
