//! Capability `download.replace` (label execute): gives up one download
//! for another release. The torrent is removed from the download client with its
//! data kept on disk (nothing is deleted), then the store blocks the
//! release — no sweep picks it again, for any slot — marks the download
//! `removed` and lets its slot go: wanted again and due a search, so the
//! sweep looks for another release. A download being or already imported
//! is a conflict. Both steps are idempotent (a torrent already gone, a
//! download already removed), so a call whose outcome nobody knows is
//! safely made again.
//!
//! It changes where a title comes from, which automatic recovery never
//! does by itself: a person chooses it (a decision's "Find another
//! release", or the operator), or a grant that names `download.replace`.

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::DownloadGet;
use capstan_sdk::contract::ops::transitions::{DownloadReplace, DownloadReplaceRecord};
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::downloads::{DownloadClient, SERVICES};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Longest reason kept.
const MAX_REASON: usize = 500;

/// Which download to give up, and why.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaceInput {
    /// The download task (from `download.submit` or `download.status`).
    pub download_task_id: String,
    /// Why its release is given up; kept with the blocklist entry.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The download given up and the release now blocked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceOutput {
    pub download_task_id: String,
    /// `removed`.
    pub status: String,
    /// The release no sweep picks again.
    pub blocked_release_id: String,
    pub blocked_title: String,
    pub reason: String,
}

/// The capability.
pub struct DownloadReplaceCapability;

impl Capability for DownloadReplaceCapability {
    type Input = ReplaceInput;
    type Output = ReplaceOutput;

    const META: Meta = Meta {
        id: "download.replace",
        version: 1,
        label: Label::Execute,
        summary: "Give up a download for another release: remove its torrent (keeping the data) and blocklist the release",
        description: "Gives up one download task for another release. Removes its torrent from the download client (qBittorrent or Transmission) with the data kept on disk, blocklists the release so no search or feed picks it again (for any title), marks the download removed and makes its title wanted again, so the sweep fetches another release. For a download that failed, stalled for good, or whose import failed. A download being or already imported is a conflict; one already replaced answers as it is. Changes a title's source, so automatic recovery never uses it on its own: a person chooses it, or a grant that names download.replace.",
        tags: &["download", "qbittorrent", "torrent", "blocklist", "replace"],
        aliases: &[
            "find another release",
            "replace download",
            "blocklist release",
            "try another release",
            "换一个资源",
            "拉黑资源",
            "重新找资源",
        ],
        replay: Replay::Safe,
        services: &SERVICES,
    };

    fn invoke(input: ReplaceInput) -> Result<Outcome<ReplaceOutput>, Failure> {
        let id = input.download_task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("downloadTaskId must not be empty".into()));
        }
        let reason =
            input.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()).unwrap_or("given up for another release");
        if reason.chars().count() > MAX_REASON {
            return Err(Failure::InvalidInput(format!("reason is longer than {MAX_REASON} characters")));
        }
        let download = domain::call::<DownloadGet>(&ById::new(id))?;
        if matches!(download.status, DownloadStatus::Importing | DownloadStatus::Imported) {
            return Err(Failure::Conflict(format!(
                "download {id} is {}; its files are in the library, there is nothing to replace",
                download.status
            )));
        }
        if download.status != DownloadStatus::Removed {
            // The client first: a torrent left running would go on
            // fetching what was given up.
            let client = DownloadClient::connect()?;
            client.remove_keeping_data(&[download.client_hash.as_str()])?;
        }
        let replaced =
            domain::call::<DownloadReplaceRecord>(&DownloadReplace { id: id.to_string(), reason: reason.to_string() })?;
        Ok(Outcome::Succeeded(ReplaceOutput {
            download_task_id: replaced.download.id,
            status: replaced.download.status.as_str().to_string(),
            blocked_release_id: replaced.blocked.release_id,
            blocked_title: replaced.blocked.title,
            reason: replaced.blocked.reason,
        }))
    }
}

capstan_sdk::export_capability!(DownloadReplaceCapability);
