//! The frozen plan an execution works from, and the re-freeze check: the
//! caller's fingerprint must be the organization's current one, and the
//! download's media files must still be the ones the plan was made from
//! (same paths, same sizes, nothing added).
//!
//! Destinations are taken from the frozen plan, not re-rendered: they are
//! what the approver saw, and the naming templates are `organize.plan`'s
//! settings. A template change shows up when someone plans again, which
//! re-freezes the organization under a new fingerprint.

use std::collections::BTreeMap;

use crate::content::{self, MediaFile};
use crate::{DOWNLOADS, Item, LIBRARY, OrganizeMode};
use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{ArtifactGet, DownloadGet, OrganizationGet};
use capstan_sdk::contract::status::{DownloadStatus, OrganizationStatus};
use capstan_sdk::host::{HostError, domain, files};
use capstan_sdk::{Failure, serde_json};
use serde::Deserialize;

/// An organization and its frozen plan.
#[derive(Debug, Clone)]
pub struct Frozen {
    pub id: String,
    pub status: OrganizationStatus,
    pub revision: i64,
    pub download_id: String,
    pub mode: OrganizeMode,
    /// The plan artifact's payload hash.
    pub fingerprint: String,
    pub items: Vec<Item>,
    /// Whether it replaces files the library holds.
    pub replaces: bool,
}

/// The plan artifact's body, as the `organization-plan` draft froze it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    download_task_id: String,
    mode: String,
    items: Vec<Item>,
}

impl Frozen {
    /// Reads organization `id` and its plan artifact.
    pub fn load(id: &str) -> Result<Frozen, Failure> {
        let org = domain::call::<OrganizationGet>(&ById::new(id))?;
        let artifact = domain::call::<ArtifactGet>(&ById::new(&org.plan_artifact_id))?;
        let body: Body = serde_json::from_value(artifact.body)
            .map_err(|e| Failure::Internal(format!("organization {id}'s plan is not an organization plan: {e}")))?;
        let mode = OrganizeMode::parse(&body.mode)
            .map_err(|_| Failure::Internal(format!("organization {id} has unknown mode {:?}", body.mode)))?;
        Ok(Frozen {
            id: id.to_string(),
            status: org.status,
            revision: org.revision,
            download_id: body.download_task_id,
            mode,
            fingerprint: artifact.payload_hash,
            items: body.items,
            replaces: org.replaces,
        })
    }

    /// `conflict` unless `fingerprint` is this organization's current one.
    pub fn check_fingerprint(&self, fingerprint: &str) -> Result<(), Failure> {
        if fingerprint.trim() != self.fingerprint {
            return Err(Failure::Conflict(format!(
                "fingerprint {fingerprint:?} is not organization {}'s current plan (revision {}); it was planned \
                 again since — review the new plan and use its fingerprint",
                self.id, self.revision
            )));
        }
        Ok(())
    }

    /// `conflict` unless the download's media are still what was planned.
    /// During a resumed move, a planned source may already be gone: that is
    /// fine when its destination holds a file of the planned size.
    pub fn check_files(&self) -> Result<(), Failure> {
        let download = domain::call::<DownloadGet>(&ById::new(&self.download_id))?;
        let status = download.status;
        let running = self.status == OrganizationStatus::Running;
        let resumable = running && status == DownloadStatus::Importing;
        if status != DownloadStatus::Completed && !resumable {
            return Err(Failure::Conflict(format!(
                "download {} is {status}; only a completed download can be organized",
                self.download_id
            )));
        }
        let content_path = download.content_path.as_deref().unwrap_or_default();
        let resumed_move = self.mode == OrganizeMode::Move && running;
        let current = match content::media_files(content_path) {
            Ok(found) => found,
            Err(Failure::NotFound(_)) if resumed_move => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut now: BTreeMap<&str, &MediaFile> = current.iter().map(|f| (f.path.as_str(), f)).collect();
        for item in &self.items {
            match now.remove(item.source.as_str()) {
                Some(file) if file.size == item.size => {}
                Some(file) => {
                    return Err(Failure::Conflict(format!(
                        "{} changed since it was planned ({} bytes, now {}); plan again",
                        item.source, item.size, file.size
                    )));
                }
                None if resumed_move && moved_already(item)? => {}
                None => {
                    return Err(Failure::Conflict(format!("{} is no longer in the download; plan again", item.source)));
                }
            }
        }
        if let Some(extra) = now.keys().next() {
            return Err(Failure::Conflict(format!(
                "{extra} appeared in the download since it was planned; plan again"
            )));
        }
        Ok(())
    }
}

/// Whether an earlier attempt of a move already placed `item`.
fn moved_already(item: &Item) -> Result<bool, Failure> {
    match files::stat(LIBRARY, &item.destination) {
        Ok(info) => Ok(!info.is_dir && info.size == item.size),
        Err(HostError::NotFound(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether the source of `item` still exists under `downloads`.
pub fn source_exists(item: &Item) -> Result<bool, Failure> {
    match files::stat(DOWNLOADS, &item.source) {
        Ok(_) => Ok(true),
        Err(HostError::NotFound(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
