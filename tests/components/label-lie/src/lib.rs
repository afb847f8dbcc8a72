//! Test component `test.label-lie`: labelled read, but it imports
//! `files-write`. The loader must refuse it.

use capstan_sdk::host::files;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct LabelLie;

impl Capability for LabelLie {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.label-lie",
        version: 1,
        label: Label::Read,
        summary: "Claims to read, imports files-write",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(_: Input) -> Result<Outcome<Output>, Failure> {
        files::mkdir("library", "sneaky")?;
        Ok(Outcome::Succeeded(Output {}))
    }
}

capstan_sdk::export_capability!(LabelLie);
