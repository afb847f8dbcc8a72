//! The domain records as callers see them, and how each is read from a
//! row. JSON columns (seasons, parsed fields, payloads, items) are stored as
//! text and handed out as JSON values.

use serde::Serialize;
use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

/// Statuses a slot moves through: wanted → reserved (a plan holds it) →
/// satisfied (an organization put it in the library).
pub const SLOT_STATUSES: &[&str] = &["wanted", "reserved", "satisfied", "unwanted"];
/// Plan statuses: draft → reserved → submitted, or failed / cancelled.
pub const PLAN_STATUSES: &[&str] = &["draft", "reserved", "submitted", "failed", "cancelled"];
/// What a download task can be, as mapped from the client's states.
pub const DOWNLOAD_STATUSES: &[&str] = &[
    "queued",
    "downloading",
    "stalled",
    "paused",
    "missing",
    "failed",
    "completed",
    "importing",
    "imported",
    "removed",
];
/// How an organization places files in the library.
pub const ORGANIZE_MODES: &[&str] = &["hardlink", "copy", "move"];
pub const ARTIFACT_KINDS: &[&str] = &["plan", "report", "evidence"];

pub(crate) fn json(r: &AnyRow, col: &str) -> Result<Value, sqlx::Error> {
    let text: String = r.try_get(col)?;
    serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

pub(crate) fn opt_json(r: &AnyRow, col: &str) -> Result<Option<Value>, sqlx::Error> {
    let text: Option<String> = r.try_get(col)?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| sqlx::Error::Decode(Box::new(e)))).transpose()
}

/// A movie or a series, as the catalog knows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Entity {
    pub id: String,
    pub kind: String,
    pub tmdb_id: Option<i64>,
    pub title: String,
    pub original_title: Option<String>,
    pub year: Option<i64>,
    /// `[{ "number": 1, "episodeCount": 10 }, ...]` for series, `[]` for movies.
    pub seasons: Value,
}

impl Entity {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Entity, sqlx::Error> {
        Ok(Entity {
            id: r.try_get("id")?,
            kind: r.try_get("kind")?,
            tmdb_id: r.try_get("tmdb_id")?,
            title: r.try_get("title")?,
            original_title: r.try_get("original_title")?,
            year: r.try_get("year")?,
            seasons: json(r, "seasons")?,
        })
    }
}

/// What is wanted for an entity: a movie at a quality, or a season.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Slot {
    pub id: String,
    pub entity_id: String,
    pub season: Option<i64>,
    pub quality: String,
    pub profile: Option<String>,
    pub status: String,
    pub revision: i64,
    pub created_at: i64,
}

impl Slot {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Slot, sqlx::Error> {
        Ok(Slot {
            id: r.try_get("id")?,
            entity_id: r.try_get("entity_id")?,
            season: r.try_get("season")?,
            quality: r.try_get("quality")?,
            profile: r.try_get("profile")?,
            status: r.try_get("status")?,
            revision: r.try_get("revision")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

/// A release an indexer offered, with what its name says and whom it is for.
#[derive(Debug, Clone, Serialize, PartialEq)]
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
    /// `unresolved`, `resolved` or `ambiguous`.
    pub identity_status: String,
    pub evidence: Option<Value>,
}

impl SourceRelease {
    pub(crate) fn from_row(r: &AnyRow) -> Result<SourceRelease, sqlx::Error> {
        Ok(SourceRelease {
            id: r.try_get("id")?,
            indexer: r.try_get("indexer")?,
            title: r.try_get("title")?,
            parsed: json(r, "parsed")?,
            size: r.try_get("size")?,
            infohash: r.try_get("infohash")?,
            download_url: r.try_get("download_url")?,
            magnet_url: r.try_get("magnet_url")?,
            entity_id: r.try_get("entity_id")?,
            identity_status: r.try_get("identity_status")?,
            evidence: opt_json(r, "evidence")?,
        })
    }
}

/// A plan to fetch one release into one slot.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub id: String,
    pub slot_id: String,
    pub source_release_id: String,
    pub status: String,
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

impl Plan {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Plan, sqlx::Error> {
        Ok(Plan {
            id: r.try_get("id")?,
            slot_id: r.try_get("slot_id")?,
            source_release_id: r.try_get("source_release_id")?,
            status: r.try_get("status")?,
            payload: json(r, "payload")?,
            payload_hash: r.try_get("payload_hash")?,
            revision: r.try_get("revision")?,
            slot_revision: r.try_get("slot_revision")?,
            note: r.try_get("note")?,
            reason: r.try_get("reason")?,
            created_by: r.try_get("created_by")?,
            run_id: r.try_get("run_id")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
            submit_failures: r.try_get("submit_failures")?,
            last_failure: r.try_get("last_failure")?,
            failing_since: r.try_get("failing_since")?,
            retry_at: r.try_get("retry_at")?,
        })
    }
}

/// A torrent handed to the download client for a submitted plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DownloadTask {
    pub id: String,
    pub plan_id: String,
    pub client_hash: String,
    pub status: String,
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

impl DownloadTask {
    pub(crate) fn from_row(r: &AnyRow) -> Result<DownloadTask, sqlx::Error> {
        Ok(DownloadTask {
            id: r.try_get("id")?,
            plan_id: r.try_get("plan_id")?,
            client_hash: r.try_get("client_hash")?,
            status: r.try_get("status")?,
            progress: r.try_get("progress")?,
            content_path: r.try_get("content_path")?,
            progress_at: r.try_get::<Option<i64>, _>("progress_at")?.unwrap_or(r.try_get("updated_at")?),
            updated_at: r.try_get("updated_at")?,
            client_state: r.try_get("client_state")?,
            download_speed: r.try_get("download_speed")?,
            seeds: r.try_get("seeds")?,
            eta_seconds: r.try_get("eta_seconds")?,
        })
    }
}

/// A stored document: a frozen plan, a report, or evidence.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub id: String,
    pub kind: String,
    pub subject: Option<String>,
    pub body: Value,
    pub payload_hash: String,
    pub created_by: String,
    pub run_id: Option<String>,
    pub created_at: i64,
}

impl Artifact {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Artifact, sqlx::Error> {
        Ok(Artifact {
            id: r.try_get("id")?,
            kind: r.try_get("kind")?,
            subject: r.try_get("subject")?,
            body: json(r, "body")?,
            payload_hash: r.try_get("payload_hash")?,
            created_by: r.try_get("created_by")?,
            run_id: r.try_get("run_id")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

/// Putting a finished download into the library, per a frozen plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: String,
    pub download_task_id: String,
    pub plan_artifact_id: String,
    pub mode: String,
    pub items: Value,
    /// `planned`, `running`, `succeeded` or `failed`.
    pub status: String,
    pub revision: i64,
    pub error: Option<String>,
    pub created_by: String,
}

impl Organization {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Organization, sqlx::Error> {
        Ok(Organization {
            id: r.try_get("id")?,
            download_task_id: r.try_get("download_task_id")?,
            plan_artifact_id: r.try_get("plan_artifact_id")?,
            mode: r.try_get("mode")?,
            items: json(r, "items")?,
            status: r.try_get("status")?,
            revision: r.try_get("revision")?,
            error: r.try_get("error")?,
            created_by: r.try_get("created_by")?,
        })
    }
}

/// A question left for a human, opened at most once per dedupe key. It
/// goes `open → investigating → awaiting_user → resolved | dismissed`
/// (the last two final) and is answered once.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub id: String,
    /// `download_failed`, `download_stalled`, `import_failed`,
    /// `agent_budget`, `identity_ambiguous`, or a component's own kind.
    pub kind: String,
    /// The record it is about (a download, an organization, a release, a run).
    pub subject: Option<String>,
    /// `open`, `investigating`, `awaiting_user`, `resolved` or `dismissed`.
    #[schema(pattern = "^(open|investigating|awaiting_user|resolved|dismissed)$")]
    pub status: String,
    /// What a human may choose: each `{id, label}` and exactly one of
    /// `capabilityId` with `input`, or `action` (`retry` with `taskId`,
    /// `reevaluate`, `accept`, `dismiss`, `ignore`); `detail` to show.
    #[schema(value_type = Vec<Object>)]
    pub options: Value,
    /// What is known: the facts, `agentInvestigation`, `autoRecover`.
    #[schema(value_type = Object)]
    pub evidence: Value,
    /// The choice and what came of it (`execution`), once resolved or
    /// dismissed; `cleared` with `facts` when the cause went away.
    #[schema(value_type = Option<Object>)]
    pub resolution: Option<Value>,
    /// One per root cause: `<kind>:<subject>`, later occurrences `#2`, ...
    pub dedupe_key: String,
    /// Who resolved or dismissed it (a principal, or `system:...`).
    pub resolved_by: Option<String>,
    /// The capability whose component opened it; `None` for the host's own.
    /// A component's decision may offer only calls without an outside
    /// effect (`domain::component_decisions`).
    pub opened_by: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A decision's statuses: `open → investigating → awaiting_user → resolved
/// | dismissed`; the last two are final.
pub const DECISION_STATUSES: &[&str] = &["open", "investigating", "awaiting_user", "resolved", "dismissed"];

impl Decision {
    pub(crate) fn from_row(r: &AnyRow) -> Result<Decision, sqlx::Error> {
        Ok(Decision {
            id: r.try_get("id")?,
            kind: r.try_get("kind")?,
            subject: r.try_get("subject")?,
            status: r.try_get("status")?,
            options: json(r, "options")?,
            evidence: json(r, "evidence")?,
            resolution: opt_json(r, "resolution")?,
            dedupe_key: r.try_get("dedupe_key")?,
            resolved_by: r.try_get("resolved_by")?,
            opened_by: r.try_get("opened_by")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }
}
