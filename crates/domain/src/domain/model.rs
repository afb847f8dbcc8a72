//! How each domain record is read from a row. The records themselves are
//! the contract's (`capstan_contract::records`), shared with guests; JSON
//! columns are stored as text and statuses as their names.

use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

pub use capstan_contract::records::{
    Artifact, BlockedRelease, Decision, DownloadTask, Entity, Episode, Organization, Plan, Slot, SourceRelease,
};
pub use capstan_contract::status::{
    ArtifactKind, DecisionStatus, DownloadStatus, EntityKind, EpisodeState, IdentityStatus, OrganizationStatus,
    OrganizeMode, PlanStatus, SlotStatus,
};

/// A record read from a row of its table.
pub(crate) trait ReadRow: Sized {
    fn from_row(r: &AnyRow) -> Result<Self, sqlx::Error>;
}

pub(crate) fn json(r: &AnyRow, col: &str) -> Result<Value, sqlx::Error> {
    let text: String = r.try_get(col)?;
    serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

pub(crate) fn opt_json(r: &AnyRow, col: &str) -> Result<Option<Value>, sqlx::Error> {
    let text: Option<String> = r.try_get(col)?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| sqlx::Error::Decode(Box::new(e)))).transpose()
}

/// A status or kind column: its text, which must be one of the names.
pub(crate) fn named<T: std::str::FromStr<Err = capstan_contract::status::UnknownName>>(
    r: &AnyRow,
    col: &str,
) -> Result<T, sqlx::Error> {
    let text: String = r.try_get(col)?;
    text.parse().map_err(|e: capstan_contract::status::UnknownName| sqlx::Error::Decode(Box::new(e)))
}

impl ReadRow for Entity {
    fn from_row(r: &AnyRow) -> Result<Entity, sqlx::Error> {
        Ok(Entity {
            id: r.try_get("id")?,
            kind: named(r, "kind")?,
            tmdb_id: r.try_get("tmdb_id")?,
            title: r.try_get("title")?,
            original_title: r.try_get("original_title")?,
            year: r.try_get("year")?,
            seasons: json(r, "seasons")?,
        })
    }
}

impl ReadRow for Slot {
    fn from_row(r: &AnyRow) -> Result<Slot, sqlx::Error> {
        Ok(Slot {
            id: r.try_get("id")?,
            entity_id: r.try_get("entity_id")?,
            season: r.try_get("season")?,
            quality: r.try_get("quality")?,
            profile: r.try_get("profile")?,
            status: named(r, "status")?,
            file: r.try_get("file")?,
            file_release_id: r.try_get("file_release_id")?,
            revision: r.try_get("revision")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

impl ReadRow for SourceRelease {
    fn from_row(r: &AnyRow) -> Result<SourceRelease, sqlx::Error> {
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
            identity_status: named(r, "identity_status")?,
            evidence: opt_json(r, "evidence")?,
        })
    }
}

impl ReadRow for Plan {
    fn from_row(r: &AnyRow) -> Result<Plan, sqlx::Error> {
        Ok(Plan {
            id: r.try_get("id")?,
            slot_id: r.try_get("slot_id")?,
            source_release_id: r.try_get("source_release_id")?,
            status: named(r, "status")?,
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

impl ReadRow for DownloadTask {
    fn from_row(r: &AnyRow) -> Result<DownloadTask, sqlx::Error> {
        Ok(DownloadTask {
            id: r.try_get("id")?,
            plan_id: r.try_get("plan_id")?,
            client_hash: r.try_get("client_hash")?,
            status: named(r, "status")?,
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

impl ReadRow for Artifact {
    fn from_row(r: &AnyRow) -> Result<Artifact, sqlx::Error> {
        Ok(Artifact {
            id: r.try_get("id")?,
            kind: named(r, "kind")?,
            subject: r.try_get("subject")?,
            body: json(r, "body")?,
            payload_hash: r.try_get("payload_hash")?,
            created_by: r.try_get("created_by")?,
            run_id: r.try_get("run_id")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

impl ReadRow for Organization {
    fn from_row(r: &AnyRow) -> Result<Organization, sqlx::Error> {
        Ok(Organization {
            id: r.try_get("id")?,
            download_task_id: r.try_get("download_task_id")?,
            plan_artifact_id: r.try_get("plan_artifact_id")?,
            mode: named(r, "mode")?,
            items: json(r, "items")?,
            replaces: r.try_get::<i64, _>("replaces")? != 0,
            status: named(r, "status")?,
            revision: r.try_get("revision")?,
            error: r.try_get("error")?,
            created_by: r.try_get("created_by")?,
        })
    }
}

impl ReadRow for Decision {
    fn from_row(r: &AnyRow) -> Result<Decision, sqlx::Error> {
        Ok(Decision {
            id: r.try_get("id")?,
            kind: r.try_get("kind")?,
            subject: r.try_get("subject")?,
            status: named(r, "status")?,
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
