//! The `records` transitions: state changes.

use serde::{Deserialize, Serialize};

use super::{ById, operation, present};
use crate::records::{BlockedRelease, DownloadTask, Entity, Episode, Organization, Plan, Policy, Slot, Task};
use crate::status::DownloadStatus;

/// The plan a step applies to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRef {
    pub plan_id: String,
}

/// A reserved plan the download client accepted, with the client's hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanSubmit {
    pub plan_id: String,
    pub client_hash: String,
}

/// A plan that ends before it was submitted, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanEnd {
    pub plan_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The submitted plan and the download it now follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    pub plan: Plan,
    pub download: DownloadTask,
}

/// What the download client reports of a download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadUpdate {
    pub id: String,
    pub status: DownloadStatus,
    /// Between 0 and 1.
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_path: Option<String>,
}

/// The download as recorded, and whether its status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownloadUpdated {
    pub download: DownloadTask,
    pub changed: bool,
}

/// A download to give up for another release, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadReplace {
    pub id: String,
    pub reason: String,
}

/// The download given up (`removed`) and its release, now blocked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownloadReplaced {
    pub download: DownloadTask,
    pub blocked: BlockedRelease,
}

/// An organization to start, with the plan fingerprint the caller worked from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationStart {
    pub id: String,
    pub fingerprint: String,
}

/// A running organization that ended, with its error when it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationFinish {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A policy draft to publish, at the revision the caller saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyPublish {
    pub name: String,
    pub revision: i64,
}

/// A title to want (its entity as the catalogue describes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WantTitle {
    pub entity: super::drafts::NewEntity,
    /// `2160p`, `1080p`, ...
    pub quality: String,
    /// A `quality.*` policy that judges releases for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// For a series: the seasons to want (default: every season after the
    /// specials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seasons: Option<Vec<i64>>,
}

/// Which episodes of a wanted series the library wants: all of `season`,
/// or only `episodes` of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EpisodesMonitor {
    pub entity_id: String,
    pub season: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episodes: Option<Vec<i64>>,
    pub monitored: bool,
}

/// What to change of a wanted title.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TitleChange {
    pub entity_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub profile: Option<Option<String>>,
}

/// A title (or one season of it) no longer wanted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TitleUnwant {
    pub entity_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub season: Option<i64>,
}

operation!(
    /// draft → reserved, taking the slot.
    PlanReserve = "plan.reserve" via Records: PlanRef => Plan
);
operation!(PlanSubmitted = "plan.submitted" via Records: PlanSubmit => Submitted);
operation!(PlanFail = "plan.fail" via Records: PlanEnd => Plan);
operation!(PlanCancel = "plan.cancel" via Records: PlanEnd => Plan);
operation!(DownloadUpdateRecord = "download.update" via Records: DownloadUpdate => DownloadUpdated);
operation!(
    /// Gives up a download for another release: its release is blocked,
    /// the download `removed`, its slot let go.
    DownloadReplaceRecord = "download.replace" via Records: DownloadReplace => DownloadReplaced
);
operation!(OrganizationStartRecord = "organization.start" via Records: OrganizationStart => Organization);
operation!(OrganizationFinishRecord = "organization.finish" via Records: OrganizationFinish => Organization);
operation!(
    /// Answers the revision now published.
    PolicyPublishRecord = "policy.publish" via Records: PolicyPublish => Policy
);
/// A title's entity and every slot it has, after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WantedTitle {
    pub entity: Entity,
    pub slots: Vec<Slot>,
}

operation!(
    /// Records the entity and opens a slot per movie or season, all or none.
    TitleWantRecord = "title.want" via Records: WantTitle => WantedTitle
);
operation!(TitleChangeRecord = "title.change" via Records: TitleChange => WantedTitle);
operation!(
    /// Monitors or unmonitors episodes; answers the season's episodes.
    EpisodesMonitorRecord = "episodes.monitor" via Records: EpisodesMonitor => Vec<Episode>
);
operation!(TitleUnwantRecord = "title.unwant" via Records: TitleUnwant => WantedTitle);
operation!(
    /// Queues a failed, dead or cancelled task again.
    TaskRetryRecord = "task.retry" via Records: ById => Task
);
operation!(
    /// Cancels a queued or running task.
    TaskCancelRecord = "task.cancel" via Records: ById => Task
);
