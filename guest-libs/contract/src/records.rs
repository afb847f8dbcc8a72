//! The domain records as the host hands them out and guests read them.
//! JSON columns (seasons, parsed fields, payloads, items, evidence) stay
//! JSON values: their shape belongs to whoever wrote them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::{
    ArtifactKind, DecisionStatus, DownloadStatus, EntityKind, EpisodeState, IdentityStatus, OrganizationStatus,
    OrganizeMode, PlanStatus, PolicyStatus, SlotStatus, TaskStatus,
};

/// A movie or a series, as the catalog knows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Entity {
    pub id: String,
    pub kind: EntityKind,
    pub tmdb_id: Option<i64>,
    pub title: String,
    pub original_title: Option<String>,
    pub year: Option<i64>,
    /// `[{ "number": 1, "episodeCount": 10 }, ...]` for series, `[]` for movies.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub seasons: Value,
}

/// One episode of a series: what the catalogue says of it, whether the
/// library wants it, and the file it has in the library.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Episode {
    pub entity_id: String,
    pub season: i64,
    pub episode: i64,
    /// The episode's number counted over every regular season (season 1
    /// episode 1 is 1), as anime releases number them; none for specials.
    pub absolute: Option<i64>,
    pub title: Option<String>,
    /// `YYYY-MM-DD`, when the catalogue knows it.
    pub air_date: Option<String>,
    pub monitored: bool,
    /// Where the library holds it, relative to the library root.
    pub file: Option<String>,
    /// The release the file came from, when the import recorded it.
    #[serde(default)]
    pub file_release_id: Option<String>,
    /// Where it stands today.
    pub state: EpisodeState,
}

/// What is wanted for an entity: a movie at a quality, or a season.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Slot {
    pub id: String,
    pub entity_id: String,
    pub season: Option<i64>,
    pub quality: String,
    pub profile: Option<String>,
    pub status: SlotStatus,
    /// For a movie: the file the library holds for it, relative to the
    /// library root, once an import placed one.
    #[serde(default)]
    pub file: Option<String>,
    /// The release that file came from.
    #[serde(default)]
    pub file_release_id: Option<String>,
    pub revision: i64,
    pub created_at: i64,
}

/// A release an indexer offered, with what its name says and whom it is for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceRelease {
    pub id: String,
    pub indexer: String,
    pub title: String,
    pub parsed: Value,
    pub size: Option<i64>,
    pub infohash: Option<String>,
    pub download_url: Option<String>,
    pub magnet_url: Option<String>,
    pub entity_id: Option<String>,
    pub identity_status: IdentityStatus,
    pub evidence: Option<Value>,
}

/// A plan to fetch one release into one slot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub id: String,
    pub slot_id: String,
    pub source_release_id: String,
    pub status: PlanStatus,
    pub payload: Value,
    pub payload_hash: String,
    pub revision: i64,
    /// The slot revision the plan was made against; reserving fails once
    /// the slot has moved on.
    pub slot_revision: i64,
    pub note: Option<String>,
    pub reason: Option<String>,
    pub created_by: String,
    pub run_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Submits of this plan that failed in a row (0 once one succeeds).
    pub submit_failures: i64,
    /// Why the last submit failed, while failures are counted.
    pub last_failure: Option<String>,
    /// When the submit first failed for this run of failures.
    pub failing_since: Option<i64>,
    /// Before this time the sweep does not try the submit again by itself.
    pub retry_at: Option<i64>,
}

/// A torrent handed to the download client for a submitted plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DownloadTask {
    pub id: String,
    pub plan_id: String,
    pub client_hash: String,
    pub status: DownloadStatus,
    pub progress: f64,
    pub content_path: Option<String>,
    /// When it last moved: its progress grew or its status changed.
    pub progress_at: i64,
    pub updated_at: i64,
    /// What the client last said besides status and progress (`None` until
    /// a sync has read it): its own state name, bytes a second, connected
    /// seeds, and its estimate of the seconds left.
    pub client_state: Option<String>,
    pub download_speed: Option<i64>,
    pub seeds: Option<i64>,
    pub eta_seconds: Option<i64>,
}

/// A stored document: a frozen plan, a report, or evidence.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub id: String,
    pub kind: ArtifactKind,
    pub subject: Option<String>,
    pub body: Value,
    pub payload_hash: String,
    pub created_by: String,
    pub run_id: Option<String>,
    pub created_at: i64,
}

/// Putting a finished download into the library, per a frozen plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: String,
    pub download_task_id: String,
    pub plan_artifact_id: String,
    pub mode: OrganizeMode,
    pub items: Value,
    /// Whether it replaces files the library holds (an upgrade): carried
    /// out by `organize.replace`, the old files going to the recycle
    /// folder, never by `organize.execute`.
    #[serde(default)]
    pub replaces: bool,
    pub status: OrganizationStatus,
    pub revision: i64,
    pub error: Option<String>,
    pub created_by: String,
}

/// A question left for a human, opened at most once per dedupe key. It
/// goes `open → investigating → awaiting_user → resolved | dismissed` (the
/// last two final) and is answered once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub id: String,
    /// `download_failed`, `download_stalled`, `import_failed`,
    /// `agent_budget`, `identity_ambiguous`, or a component's own kind.
    pub kind: String,
    /// The record it is about (a download, an organization, a release, a run).
    pub subject: Option<String>,
    pub status: DecisionStatus,
    /// What a human may choose: each `{id, label}` and exactly one of
    /// `capabilityId` with `input`, or `action` (`retry` with `taskId`,
    /// `reevaluate`, `accept`, `dismiss`, `ignore`); `detail` to show.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub options: Value,
    /// What is known: the facts, `agentInvestigation`, `autoRecover`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub evidence: Value,
    /// The choice and what came of it (`execution`), once resolved or
    /// dismissed; `cleared` with `facts` when the cause went away.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub resolution: Option<Value>,
    /// One per root cause: `<kind>:<subject>`, later occurrences `#2`, ...
    pub dedupe_key: String,
    /// Who resolved or dismissed it (a principal, or `system:...`).
    pub resolved_by: Option<String>,
    /// The capability whose component opened it; `None` for the host's own.
    /// A component's decision may offer only calls without an outside
    /// effect.
    pub opened_by: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A durable task the worker runs (a sync, an import, a decision carried
/// out, an agent run's turn).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub kind: String,
    pub subject: Option<String>,
    pub payload: Value,
    pub status: TaskStatus,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_after: i64,
    pub dedupe_key: Option<String>,
    pub lease_owner: Option<String>,
    /// Proves the lease to the worker that holds it; never handed out.
    #[serde(skip)]
    pub lease_token: Option<String>,
    pub lease_expires_at: Option<i64>,
    pub result: Option<Value>,
    pub last_error: Option<String>,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A release the sweep does not pick again (the blocklist), and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlockedRelease {
    pub release_id: String,
    /// The release's name, as the indexer listed it.
    pub title: String,
    /// The title it was identified as, when it was.
    pub entity_id: Option<String>,
    pub reason: String,
    pub blocked_by: String,
    pub created_at: i64,
}

/// One revision of a policy (`quality.movies`, ...).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub name: String,
    pub revision: i64,
    pub status: PolicyStatus,
    pub body: Value,
    pub created_by: String,
}

impl Policy {
    /// What the policy governs: its body's `kind`, else the first part of
    /// its name (`quality.movies` is a `quality` policy).
    pub fn kind(&self) -> &str {
        self.body.get("kind").and_then(|k| k.as_str()).unwrap_or_else(|| self.name.split('.').next().unwrap_or(""))
    }
}
