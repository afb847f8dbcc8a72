//! Test component `test.counter-safe` (label execute, replay safe): adds
//! one to the loopback counter service per call.

mod common;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};

pub struct Counter;

impl Capability for Counter {
    type Input = common::Input;
    type Output = common::Output;
    const META: Meta = Meta {
        id: "test.counter-safe",
        version: 1,
        label: Label::Execute,
        summary: "Counts its effects on a test server",
        description: "Used by the end-to-end suites only.",
        tags: &["test", "policy.counting"],
        aliases: &[],
        replay: Replay::Safe,
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
