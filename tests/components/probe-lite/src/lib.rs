//! Test component `test.probe` with label read and no services: an earlier,
//! humbler version of the probe, so replacing it with the full probe raises
//! the label and adds a service.

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {
    pub lite: bool,
}

pub struct ProbeLite;

impl Capability for ProbeLite {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.probe",
        version: 1,
        label: Label::Read,
        summary: "Read-only predecessor of the test probe",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(_: Input) -> Result<Outcome<Output>, Failure> {
        Ok(Outcome::Succeeded(Output { lite: true }))
    }
}

capstan_sdk::export_capability!(ProbeLite);
