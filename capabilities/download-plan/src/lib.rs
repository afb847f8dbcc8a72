//! Capability `download.plan` (label propose): drafts an acquisition plan —
//! this release, into this wanted slot — in the domain store. A draft is an
//! internal fact: it reserves nothing and touches no download client. Its
//! id, payload hash and revision are what an approval is bound to and what
//! `download.submit` acts on.
//!
//! The domain store decides whether the plan makes sense (the release must
//! be identified as the slot's entity, the slot must still be wanted); this
//! component only asks and reports its answer.

use capstan_sdk::contract::ops::drafts::{AcquisitionPlanDraft, NewPlan};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// What to plan.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanInput {
    /// The source release to download (an id from the domain store).
    pub source_release_id: String,
    /// The wanted slot it should fill.
    pub slot_id: String,
}

/// The drafted plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// The plan id: give it to `download.submit`, or to an approval request.
    pub id: String,
    /// `draft` for a new plan.
    pub status: String,
    /// Bumped by every step; an approval binds to one revision.
    pub revision: i64,
    /// Hash of what the plan will do; an approval binds to it.
    pub payload_hash: String,
    pub slot_id: String,
    pub source_release_id: String,
    /// The release's title, as the plan froze it.
    pub title: Option<String>,
    /// The torrent's infohash, when the release has one.
    pub infohash: Option<String>,
}

/// The capability.
pub struct DownloadPlan;

fn required(name: &str, value: &str) -> Result<(), Failure> {
    if value.trim().is_empty() {
        return Err(Failure::InvalidInput(format!("{name} must not be empty")));
    }
    Ok(())
}

impl Capability for DownloadPlan {
    type Input = PlanInput;
    type Output = PlanOutput;

    const META: Meta = Meta {
        id: "download.plan",
        version: 1,
        label: Label::Propose,
        summary: "Draft a plan to download a release into a wanted slot (reserves nothing)",
        description: "Drafts an acquisition plan in the domain store: the given source release, downloaded into the given wanted slot. The release must already be identified as the slot's movie or series and the slot must still be wanted (or satisfied, for a PROPER/REPACK of the file it holds under its quality profile); a plan that would replace a file the library holds says so in its payload (upgrade: better or proper). Otherwise the answer is a conflict saying why. Drafting the same release for the same slot again returns the same draft. A draft reserves nothing and sends nothing to the download client: pass its id to download.submit (after approval, when one is needed) to act on it. Returns the plan's id, status, revision and payload hash.",
        tags: &["download", "policy.acquisition", "plan", "acquisition"],
        aliases: &[
            "plan download",
            "draft download",
            "grab release",
            "download this release",
            "计划下载",
            "下载计划",
            "准备下载",
            "选择资源",
        ],
        // Drafting is idempotent in the store: the same draft comes back.
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: PlanInput) -> Result<Outcome<PlanOutput>, Failure> {
        required("sourceReleaseId", &input.source_release_id)?;
        required("slotId", &input.slot_id)?;
        let plan = domain::call::<AcquisitionPlanDraft>(&NewPlan {
            slot_id: input.slot_id.trim().to_string(),
            source_release_id: input.source_release_id.trim().to_string(),
            note: None,
        })?;
        // The payload is what the store froze of the release.
        let text = |key: &str| plan.payload.get(key).and_then(|v| v.as_str()).map(String::from);
        Ok(Outcome::Succeeded(PlanOutput {
            title: text("title"),
            infohash: text("infohash"),
            id: plan.id,
            status: plan.status.as_str().to_string(),
            revision: plan.revision,
            payload_hash: plan.payload_hash,
            slot_id: plan.slot_id,
            source_release_id: plan.source_release_id,
        }))
    }
}

capstan_sdk::export_capability!(DownloadPlan);
