//! Capability `policy.apply` (label execute): publishes a draft revision
//! of a policy through the `records` transition `policy.publish`; the
//! revision published before is superseded in the same step, and grants
//! bound to it stop authorising. Use `policy.preview` first to see what a
//! quality profile would change.

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::transitions::{PolicyPublish, PolicyPublishRecord};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Input: which revision of which policy.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyInput {
    /// The policy name, e.g. `quality.movies`.
    pub name: String,
    /// The draft revision to publish.
    pub revision: i64,
}

/// Output: the policy as now published.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyOutput {
    pub name: String,
    pub revision: i64,
    /// `published`.
    pub status: String,
    pub body: Value,
}

/// The capability.
pub struct PolicyApply;

impl Capability for PolicyApply {
    type Input = ApplyInput;
    type Output = ApplyOutput;

    const META: Meta = Meta {
        id: "policy.apply",
        version: 1,
        label: Label::Execute,
        summary: "Publish a draft policy revision, superseding the one in force",
        description: "Publishes one draft revision of a policy (for example a quality profile); the previously published revision becomes superseded and automation grants bound to it stop authorising. Only a draft can be published. Run policy.preview first to see what the change would do.",
        tags: &["policy", "quality"],
        aliases: &["apply policy", "publish policy", "use this profile", "应用策略", "发布策略", "启用规则"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: ApplyInput) -> Result<Outcome<ApplyOutput>, Failure> {
        let name = input.name.trim();
        if name.is_empty() {
            return Err(Failure::InvalidInput("name must not be empty".into()));
        }
        if input.revision < 1 {
            return Err(Failure::InvalidInput(format!("revision {} is not a revision number", input.revision)));
        }
        // The policy record belongs to the host's policy store: the contract
        // answers it as JSON.
        let policy =
            domain::call::<PolicyPublishRecord>(&PolicyPublish { name: name.to_string(), revision: input.revision })?;
        Ok(Outcome::Succeeded(ApplyOutput {
            name: policy.name,
            revision: policy.revision,
            status: policy.status.as_str().to_string(),
            body: policy.body,
        }))
    }
}

capstan_sdk::export_capability!(PolicyApply);
