//! Test component `test.huge-descriptor` whose input schema, built when it
//! is described, is 2 MiB: the loader must refuse a descriptor over its
//! size caps rather than store, list and send it to models.

use std::borrow::Cow;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
pub struct Input {}

impl schemars::JsonSchema for Input {
    fn schema_name() -> Cow<'static, str> {
        "Input".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "description": "x".repeat(2 << 20) })
    }
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct HugeDescriptor;

impl Capability for HugeDescriptor {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.huge-descriptor",
        version: 1,
        label: Label::Read,
        summary: "Has a descriptor over the size caps",
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

capstan_sdk::export_capability!(HugeDescriptor);
