//! The `library` queries: reads of the domain store.

use serde::{Deserialize, Serialize};

use super::{ById, default_limit, is_default_limit, operation};
use crate::records::{
    Artifact, Decision, DownloadTask, Entity, Episode, Organization, Plan, Policy, Slot, SourceRelease, Task,
};
use crate::status::{DecisionStatus, DownloadStatus, EntityKind, PlanStatus, SlotStatus};

/// Entities, optionally of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ByKind {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EntityKind>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// Slots in one status (`wanted` when not said), oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SlotsListed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SlotStatus>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// Plans, newest first, optionally in one status or for one slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlansListed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PlanStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_id: Option<String>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// Downloads, most recently changed first, optionally in one status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadsListed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DownloadStatus>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// Decisions, newest first, optionally in one status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionsListed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DecisionStatus>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// Tasks, newest first, optionally about one subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TasksListed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_id: Option<String>,
    #[serde(default = "default_limit", skip_serializing_if = "is_default_limit")]
    pub limit: i64,
}

/// A release by its v1 infohash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByInfohash {
    pub infohash: String,
}

/// A published policy by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByName {
    pub name: String,
}

/// A decision as a component sees it: whole when it opened the decision,
/// else only its outline (evidence, options and answers carry what other
/// openers found and what a human chose).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SeenDecision {
    Whole(Box<Decision>),
    Outline(DecisionOutline),
}

impl SeenDecision {
    /// The decision's id, whatever is seen of it.
    pub fn id(&self) -> &str {
        match self {
            SeenDecision::Whole(decision) => &decision.id,
            SeenDecision::Outline(outline) => &outline.id,
        }
    }
}

/// What anyone may see of a decision; its opener is told its dedupe key too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionOutline {
    pub id: String,
    pub kind: String,
    pub subject: Option<String>,
    pub status: DecisionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
}

/// What the library holds and wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Inventory {
    pub items: Vec<InventoryItem>,
}

/// An entity with its slots, each with what is happening to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InventoryItem {
    pub entity: Entity,
    pub slots: Vec<SlotActivity>,
}

/// A slot as the Library shows it: the slot's own fields, with `download`
/// while a submitted plan's download is followed, or `waitingPlan` while a
/// drafted plan waits for someone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SlotActivity {
    #[serde(flatten)]
    pub slot: Slot,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<DownloadActivity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_plan: Option<WaitingPlan>,
    /// For a season: how its episodes stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episodes: Option<SeasonProgress>,
    /// While files it holds are below its quality profile's cutoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeWanted>,
}

/// Files a slot holds below its profile's cutoff: an upgrade is wanted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpgradeWanted {
    /// The resolution a file is good enough at.
    pub cutoff: String,
    /// How many files are below it (a movie's one, or a season's episodes).
    pub below: i64,
    /// The resolution of the best file below it, as its release says.
    pub have: Option<String>,
}

/// How a season's episodes stand: counts by [`crate::status::EpisodeState`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SeasonProgress {
    pub total: i64,
    pub have: i64,
    pub missing: i64,
    pub not_aired: i64,
    pub unmonitored: i64,
}

/// The download of the plan submitted for a slot, as the client last told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DownloadActivity {
    pub id: String,
    pub plan_id: String,
    pub status: DownloadStatus,
    pub progress: f64,
    /// The client's own state name, bytes a second, connected seeds and its
    /// estimate of the seconds left (`null` until a sync has read them).
    pub client_state: Option<String>,
    pub download_speed: Option<i64>,
    pub seeds: Option<i64>,
    pub eta_seconds: Option<i64>,
    pub updated_at: i64,
}

/// A plan drafted for a slot that waits: for an approval, or for handing it
/// to the client to work again (`submitFailure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WaitingPlan {
    pub id: String,
    /// The chosen release's name.
    pub title: Option<String>,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_failure: Option<SubmitFailure>,
}

/// Why handing a plan to the download client keeps failing, and the
/// decision that asks a human about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubmitFailure {
    /// The last failure's reason.
    pub reason: Option<String>,
    /// Failures in a row.
    pub failures: i64,
    pub failing_since: Option<i64>,
    /// When the sweep tries again by itself.
    pub retry_at: Option<i64>,
    pub decision_id: Option<String>,
}

/// Every list answers [`DEFAULT_LIMIT`](super::DEFAULT_LIMIT) records when
/// the caller names no limit, and filters nothing.
macro_rules! unfiltered {
    ($($list:ident { $($field:ident),* }),+) => {
        $(impl Default for $list {
            fn default() -> $list {
                $list { $($field: None,)* limit: default_limit() }
            }
        })+
    };
}

unfiltered!(
    ByKind { kind },
    SlotsListed { status },
    PlansListed { status, slot_id },
    DownloadsListed { status },
    DecisionsListed { status },
    TasksListed { subject_id }
);

operation!(EntityGet = "entity.get" via Library: ById => Entity);
operation!(EntitiesList = "entities.list" via Library: ByKind => Vec<Entity>);
operation!(SlotGet = "slot.get" via Library: ById => Slot);
operation!(
    /// The slots of the entity `id`.
    SlotsForEntity = "slots.for-entity" via Library: ById => Vec<Slot>
);
operation!(SlotsList = "slots.list" via Library: SlotsListed => Vec<Slot>);
operation!(
    /// The episodes of the series `id`, in season and episode order.
    EpisodesForEntity = "episodes.for-entity" via Library: ById => Vec<Episode>
);
operation!(ReleaseGet = "release.get" via Library: ById => SourceRelease);
operation!(ReleaseByInfohash = "release.by-infohash" via Library: ByInfohash => Option<SourceRelease>);
operation!(
    /// The releases identified as the entity `id`.
    ReleasesForEntity = "releases.for-entity" via Library: ById => Vec<SourceRelease>
);
operation!(PlanGet = "plan.get" via Library: ById => Plan);
operation!(PlansList = "plans.list" via Library: PlansListed => Vec<Plan>);
operation!(DownloadGet = "download.get" via Library: ById => DownloadTask);
operation!(
    /// The download of the plan `id`, once it was submitted.
    DownloadForPlan = "download.for-plan" via Library: ById => Option<DownloadTask>
);
operation!(DownloadsList = "downloads.list" via Library: DownloadsListed => Vec<DownloadTask>);
operation!(OrganizationGet = "organization.get" via Library: ById => Organization);
operation!(
    /// The organizations of the download `id`.
    OrganizationsForDownload = "organizations.for-download" via Library: ById => Vec<Organization>
);
operation!(ArtifactGet = "artifact.get" via Library: ById => Artifact);
operation!(DecisionsList = "decisions.list" via Library: DecisionsListed => Vec<SeenDecision>);
operation!(InventoryQuery = "inventory" via Library: ByKind => Inventory);
operation!(
    /// The published revision of the policy `name`.
    PolicyGet = "policy.get" via Library: ByName => Policy
);
operation!(TaskGet = "task.get" via Library: ById => Task);
operation!(TasksList = "tasks.list" via Library: TasksListed => Vec<Task>);
