//! Test component `test.counter-never` (label execute, replay never): adds
//! one to the loopback counter service per call.

#[path = "../../counter-safe/src/common.rs"]
mod common;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};

pub struct Counter;

impl Capability for Counter {
    type Input = common::Input;
    type Output = common::Output;
    const META: Meta = Meta {
        id: "test.counter-never",
        version: 1,
        label: Label::Execute,
        summary: "Counts its effects on a test server",
        description: "Used by the end-to-end suites only.",
        tags: &["test", "policy.counting"],
        aliases: &[],
        replay: Replay::Never,
        services: &["counter"],
    };

    fn invoke(input: common::Input) -> Result<Outcome<common::Output>, Failure> {
        common::invoke(input)
    }

    fn verify(input: common::Input) -> Result<Verification<common::Output>, Failure> {
        common::verify(input)
    }
}

capstan_sdk::export_capability!(Counter);
