//! Capability `policy.preview` (label preview): what publishing a quality
//! profile would change, before anything changes. For every wanted slot it
//! judges the known releases of the slot's entity under the published
//! revision of the policy (when there is one) and under the proposed body,
//! and reports which releases become acceptable or rejected and whether the
//! preferred release moves. It imports `library` only, so it cannot write;
//! [`profile`] owns the profile and its judgement.

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{ByName, EntityGet, PolicyGet, ReleasesForEntity, SlotsList, SlotsListed};
use capstan_sdk::contract::records::Slot;
use capstan_sdk::contract::status::SlotStatus;
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, HostError, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use capstan_quality::{Judgement, Offer, QualityProfile, covers_season, offer, preferred};

/// Input: the policy and the body it would get.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewInput {
    /// The policy name, e.g. `quality.movies`.
    pub name: String,
    /// The proposed quality profile.
    pub body: QualityProfile,
}

/// How one release fares under the current and the proposed profile.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseDiff {
    pub release_id: String,
    pub title: String,
    pub current: Judgement,
    pub proposed: Judgement,
    /// `becomes-acceptable`, `becomes-rejected`, `still-acceptable` or `still-rejected`.
    pub change: String,
}

/// One wanted slot's difference.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlotDiff {
    pub slot_id: String,
    pub entity_id: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub season: Option<i64>,
    pub quality: String,
    /// The release the current profile would pick, if any is acceptable.
    pub current_preferred: Option<String>,
    /// The release the proposed profile would pick.
    pub proposed_preferred: Option<String>,
    pub preferred_changed: bool,
    pub releases: Vec<ReleaseDiff>,
}

/// Output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewOutput {
    pub name: String,
    /// The published revision compared against; absent when none is published.
    pub current_revision: Option<i64>,
    /// Why the current side accepts everything, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub slots: Vec<SlotDiff>,
    /// Totals: slots, releases, becomeAcceptable, becomeRejected, preferredChanged.
    pub summary: Value,
}

/// The capability.
pub struct PolicyPreview;

impl Capability for PolicyPreview {
    type Input = PreviewInput;
    type Output = PreviewOutput;

    const META: Meta = Meta {
        id: "policy.preview",
        version: 1,
        label: Label::Preview,
        summary: "Show what a proposed quality profile would change for wanted slots and known releases, without changing anything",
        description: "Compares a proposed quality profile (preferred resolutions, allowed sources, size limits, preferred codecs, rejected terms) with the published revision of the same policy: for every wanted slot, which known releases of its movie or series would become acceptable or rejected and which release would be preferred. Writes nothing; publish a draft revision with policy.apply.",
        tags: &["policy", "quality", "preview"],
        aliases: &["preview policy", "what would change", "dry run profile", "预览策略", "策略预览", "会有什么变化"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: PreviewInput) -> Result<Outcome<PreviewOutput>, Failure> {
        let name = input.name.trim();
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        {
            return Err(Failure::InvalidInput(format!(
                "policy name {name:?} must be lowercase letters, digits, . or -"
            )));
        }
        let problems = input.body.problems();
        if !problems.is_empty() {
            return Err(Failure::InvalidInput(format!(
                "body is not a usable quality profile: {}",
                problems.join("; ")
            )));
        }
        let (current, current_revision, note) = match domain::call::<PolicyGet>(&ByName { name: name.to_string() }) {
            Ok(policy) => match serde_json::from_value::<QualityProfile>(policy.body) {
                Ok(p) => (Some(p), Some(policy.revision), None),
                Err(e) => (
                    None,
                    Some(policy.revision),
                    Some(format!(
                        "the published body is not a quality profile ({e}); compared as accepting everything"
                    )),
                ),
            },
            Err(HostError::NotFound(_)) => {
                (None, None, Some("no revision is published; compared as accepting everything".to_string()))
            }
            Err(e) => return Err(e.into()),
        };
        let proposed = input.body;
        let wanted = domain::call::<SlotsList>(&SlotsListed { status: Some(SlotStatus::Wanted), limit: 1000 })?;
        let mut slots = Vec::new();
        for slot in &wanted {
            slots.push(slot_diff(slot, current.as_ref(), &proposed)?);
        }
        let releases = slots.iter().flat_map(|s| &s.releases);
        let count = |change: &str| releases.clone().filter(|r| r.change == change).count();
        let summary = json!({
            "slots": slots.len(),
            "releases": releases.clone().count(),
            "becomeAcceptable": count("becomes-acceptable"),
            "becomeRejected": count("becomes-rejected"),
            "preferredChanged": slots.iter().filter(|s| s.preferred_changed).count(),
        });
        Ok(Outcome::Succeeded(PreviewOutput { name: name.to_string(), current_revision, note, slots, summary }))
    }
}

fn slot_diff(slot: &Slot, current: Option<&QualityProfile>, proposed: &QualityProfile) -> Result<SlotDiff, Failure> {
    let entity = domain::call::<EntityGet>(&ById::new(&slot.entity_id))?;
    let releases = domain::call::<ReleasesForEntity>(&ById::new(&slot.entity_id))?;
    let season = slot.season;
    // A season slot only cares about releases of that season, packs that
    // hold it, and releases that do not say which season they are.
    // `offer` reads a release record's `title`, `parsed` and `size` as JSON.
    let offers: Vec<(String, Offer)> = releases
        .into_iter()
        .filter(|r| season.is_none_or(|s| covers_season(&r.parsed, s) != Some(false)))
        .map(|r| {
            let offered = offer(&json!(r));
            (r.id, offered)
        })
        .collect();
    let accept_all = Judgement { acceptable: true, reasons: Vec::new() };
    let diffs = offers
        .iter()
        .map(|(id, o)| {
            let before = current.map_or_else(|| accept_all.clone(), |p| p.judge(o));
            let after = proposed.judge(o);
            let change = match (before.acceptable, after.acceptable) {
                (false, true) => "becomes-acceptable",
                (true, false) => "becomes-rejected",
                (true, true) => "still-acceptable",
                (false, false) => "still-rejected",
            };
            ReleaseDiff {
                release_id: id.clone(),
                title: o.name.clone(),
                current: before,
                proposed: after,
                change: change.into(),
            }
        })
        .collect();
    let current_preferred = preferred(current, &offers).cloned();
    let proposed_preferred = preferred(Some(proposed), &offers).cloned();
    Ok(SlotDiff {
        slot_id: slot.id.clone(),
        entity_id: slot.entity_id.clone(),
        title: entity.title,
        season,
        quality: slot.quality.clone(),
        preferred_changed: current_preferred != proposed_preferred,
        current_preferred,
        proposed_preferred,
        releases: diffs,
    })
}

capstan_sdk::export_capability!(PolicyPreview);
