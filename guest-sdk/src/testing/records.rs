//! Whole domain records for a mock host to answer with: each filled with
//! plain values a test then changes where it matters
//! (`Plan { status: PlanStatus::Submitted, ..records::plan("p1", payload) }`). The host
//! answers whole records, so a capability reading them through the
//! contract needs whole records from the mock too.

use capstan_contract::records::{
    Artifact, Decision, DownloadTask, Entity, Organization, Plan, Policy, Slot, SourceRelease, Task,
};
use capstan_contract::status::{
    ArtifactKind, DecisionStatus, DownloadStatus, EntityKind, IdentityStatus, OrganizationStatus, OrganizeMode,
    PlanStatus, PolicyStatus, SlotStatus, TaskStatus,
};
use serde_json::{Value, json};

/// A movie entity.
pub fn entity(id: &str) -> Entity {
    Entity {
        id: id.into(),
        kind: EntityKind::Movie,
        tmdb_id: None,
        title: "Title".into(),
        original_title: None,
        year: None,
        seasons: json!([]),
    }
}

/// A wanted 1080p slot of the entity `entity_id`.
pub fn slot(id: &str, entity_id: &str) -> Slot {
    Slot {
        id: id.into(),
        entity_id: entity_id.into(),
        season: None,
        quality: "1080p".into(),
        profile: None,
        status: SlotStatus::Wanted,
        file: None,
        file_release_id: None,
        revision: 1,
        created_at: 0,
    }
}

/// An unresolved release from the indexer `indexer`.
pub fn release(id: &str, title: &str) -> SourceRelease {
    SourceRelease {
        id: id.into(),
        indexer: "indexer".into(),
        title: title.into(),
        parsed: json!({}),
        size: None,
        infohash: None,
        download_url: None,
        magnet_url: None,
        entity_id: None,
        identity_status: IdentityStatus::Unresolved,
        evidence: None,
    }
}

/// A draft plan with `payload`.
pub fn plan(id: &str, payload: Value) -> Plan {
    Plan {
        id: id.into(),
        slot_id: "slot".into(),
        source_release_id: "release".into(),
        status: PlanStatus::Draft,
        payload,
        payload_hash: "hash".into(),
        revision: 1,
        slot_revision: 1,
        note: None,
        reason: None,
        created_by: "admin:test".into(),
        run_id: None,
        created_at: 0,
        updated_at: 0,
        submit_failures: 0,
        last_failure: None,
        failing_since: None,
        retry_at: None,
    }
}

/// A queued download of the plan `plan_id`, held by the client as `client_hash`.
pub fn download(id: &str, plan_id: &str, client_hash: &str) -> DownloadTask {
    DownloadTask {
        id: id.into(),
        plan_id: plan_id.into(),
        client_hash: client_hash.into(),
        status: DownloadStatus::Queued,
        progress: 0.0,
        content_path: None,
        progress_at: 0,
        updated_at: 0,
        client_state: None,
        download_speed: None,
        seeds: None,
        eta_seconds: None,
    }
}

/// A plan artifact holding `body`.
pub fn artifact(id: &str, body: Value) -> Artifact {
    Artifact {
        id: id.into(),
        kind: ArtifactKind::Plan,
        subject: None,
        body,
        payload_hash: "hash".into(),
        created_by: "admin:test".into(),
        run_id: None,
        created_at: 0,
    }
}

/// A planned hardlink organization of the download `download_id`.
pub fn organization(id: &str, download_id: &str, items: Value) -> Organization {
    Organization {
        id: id.into(),
        download_task_id: download_id.into(),
        plan_artifact_id: "artifact".into(),
        mode: OrganizeMode::Hardlink,
        items,
        replaces: false,
        status: OrganizationStatus::Planned,
        revision: 1,
        error: None,
        created_by: "admin:test".into(),
    }
}

/// An open decision of `kind`.
pub fn decision(id: &str, kind: &str) -> Decision {
    Decision {
        id: id.into(),
        kind: kind.into(),
        subject: None,
        status: DecisionStatus::Open,
        options: json!([]),
        evidence: json!({}),
        resolution: None,
        dedupe_key: format!("{kind}:{id}"),
        resolved_by: None,
        opened_by: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// A queued task of `kind`, with one attempt of three left unused.
pub fn task(id: &str, kind: &str) -> Task {
    Task {
        id: id.into(),
        kind: kind.into(),
        subject: None,
        payload: json!({}),
        status: TaskStatus::Queued,
        attempts: 0,
        max_attempts: 3,
        run_after: 0,
        dedupe_key: None,
        lease_owner: None,
        lease_token: None,
        lease_expires_at: None,
        result: None,
        last_error: None,
        created_by: "system:test".into(),
        created_at: 0,
        updated_at: 0,
    }
}

/// The published revision 1 of the policy `name` with `body`.
pub fn policy(name: &str, body: Value) -> Policy {
    Policy { name: name.into(), revision: 1, status: PolicyStatus::Published, body, created_by: "admin:test".into() }
}
