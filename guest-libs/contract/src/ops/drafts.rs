//! The `drafts` kinds: internal facts with no outside effect.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::operation;
use super::queries::SeenDecision;
use crate::records::{Artifact, Entity, Organization, Plan, SourceRelease};
use crate::status::{EntityKind, IdentityStatus, OrganizeMode};

/// An entity to record; one with the same TMDB id (or, without one, the
/// same kind, title and year) is updated instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEntity {
    pub kind: EntityKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmdb_id: Option<i64>,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<i64>,
    /// `[{ "number": 1, "episodeCount": 10 }, ...]` for series.
    #[serde(default)]
    pub seasons: Vec<Value>,
    /// A series' episodes as the catalogue lists them, for the seasons
    /// read; recorded beside the ones already known (their monitoring and
    /// files kept), so a later read refreshes titles and air dates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<NewEpisode>,
}

/// One episode of a series, as the catalogue lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEpisode {
    pub season: i64,
    pub episode: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub air_date: Option<String>,
}

/// A release to record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRelease {
    pub indexer: String,
    pub title: String,
    #[serde(default)]
    pub parsed: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infohash: Option<String>,
    /// The indexer's `.torrent` link (or, from releases recorded before
    /// magnets were kept apart, a magnet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// The indexer's magnet link, trackers and all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magnet_url: Option<String>,
}

/// Whom a release is for: `resolved` with an entity, or `ambiguous`
/// without one, with the evidence either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdentityMatch {
    pub release_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_id: Option<String>,
    pub status: IdentityStatus,
    #[serde(default)]
    pub evidence: Value,
}

/// A decision to open for a human, once per dedupe key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenDecision {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default)]
    pub options: Value,
    #[serde(default)]
    pub evidence: Value,
    pub dedupe_key: String,
}

/// A plan to draft: one release into one slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPlan {
    pub slot_id: String,
    pub source_release_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An organization plan to freeze for a completed download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewOrganizationPlan {
    pub download_task_id: String,
    pub mode: OrganizeMode,
    /// `[{ "source": ..., "destination": ..., ... }]`, as the planner worked them out.
    pub items: Vec<Value>,
}

/// The organization a plan froze, and the artifact that holds the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganizationPlanned {
    pub organization: Organization,
    pub artifact: Artifact,
}

/// Evidence to keep, optionally about one record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewEvidence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub body: Value,
}

operation!(EntityDraft = "entity" via Drafts: NewEntity => Entity);
operation!(SourceReleaseDraft = "source-release" via Drafts: NewRelease => SourceRelease);
operation!(IdentityMatchDraft = "identity-match" via Drafts: IdentityMatch => SourceRelease);
/// The decision opened (or found under its dedupe key) and whether this
/// call opened it. A component is told the outline of its decision, with
/// its dedupe key; the host's own callers the whole decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionOpened {
    pub decision: SeenDecision,
    pub created: bool,
}

operation!(DecisionDraft = "decision" via Drafts: OpenDecision => DecisionOpened);
operation!(AcquisitionPlanDraft = "acquisition-plan" via Drafts: NewPlan => Plan);
operation!(OrganizationPlanDraft = "organization-plan" via Drafts: NewOrganizationPlan => OrganizationPlanned);
operation!(EvidenceDraft = "evidence" via Drafts: NewEvidence => Artifact);
