//! Test component `test.probe` with label read and no services: an earlier,
//! humbler version of the probe, so replacing it with the full probe raises
//! the label and adds a service. It can also busy-wait, for tests that need
//! a slow read.

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {
    /// Busy-waits this long before answering (for tests that need a slow read).
    #[serde(default)]
    pub wait_ms: u64,
}

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

    fn invoke(input: Input) -> Result<Outcome<Output>, Failure> {
        if input.wait_ms > 0 {
            let until = capstan_sdk::host::now_ms() + input.wait_ms;
            while capstan_sdk::host::now_ms() < until {
                std::hint::spin_loop();
            }
        }
        Ok(Outcome::Succeeded(Output { lite: true }))
    }
}

capstan_sdk::export_capability!(ProbeLite);
