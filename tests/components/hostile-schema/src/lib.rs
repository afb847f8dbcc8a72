//! Test component `test.hostile-schema`, labelled read, whose input schema
//! is a chain of 40 definitions, each an `allOf` of two references to the
//! next: 2 KB of text that would have a check of any input visit 2^42
//! nodes. The loader must measure that without expanding it and refuse the
//! component, while the host keeps answering everyone else.

use std::borrow::Cow;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

/// Levels of the doubling chain.
const LEVELS: usize = 40;

#[derive(Deserialize)]
pub struct Input {}

impl schemars::JsonSchema for Input {
    fn schema_name() -> Cow<'static, str> {
        "Input".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut defs = serde_json::Map::new();
        for level in 0..LEVELS {
            let next = serde_json::json!({ "$ref": format!("#/$defs/d{}", level + 1) });
            defs.insert(format!("d{level}"), serde_json::json!({ "allOf": [next.clone(), next] }));
        }
        defs.insert(format!("d{LEVELS}"), serde_json::json!({ "type": "object" }));
        schemars::json_schema!({ "$ref": "#/$defs/d0", "$defs": defs })
    }
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct HostileSchema;

impl Capability for HostileSchema {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.hostile-schema",
        version: 1,
        label: Label::Read,
        summary: "Has an input schema whose check would never end",
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

capstan_sdk::export_capability!(HostileSchema);
