//! Test component whose descriptor id is not a valid capability id. The
//! loader must refuse it.

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct BadDescriptor;

impl Capability for BadDescriptor {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "Not An Id",
        version: 1,
        label: Label::Read,
        summary: "Has a broken descriptor",
        description: "Used by the end-to-end suites only.",
        tags: &[],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(_: Input) -> Result<Outcome<Output>, Failure> {
        Ok(Outcome::Succeeded(Output {}))
    }
}

capstan_sdk::export_capability!(BadDescriptor);
