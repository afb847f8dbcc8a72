//! Capability `download.recheck` (label execute): asks qBittorrent to verify
//! one download's data on disk again and to resume it — the repair for a
//! torrent that lost its files and got them back, or that stopped. It acts
//! only on the torrent the download task recorded (by its client hash) and
//! never deletes, moves, re-sources or re-tags anything.

use capstan_sdk::host::domain;
use capstan_sdk::qbittorrent::{Client, Torrent};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[cfg(test)]
mod tests;

/// Which download to recheck.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecheckInput {
    /// The download task (from `download.submit` or `download.status`).
    pub download_task_id: String,
}

/// The torrent as qBittorrent reports it right after the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecheckOutput {
    pub download_task_id: String,
    pub client_hash: String,
    /// False when qBittorrent was already checking the data: asking again
    /// mid-check can leave it checking for good, so nothing was sent.
    pub rechecked: bool,
    /// queued, downloading, stalled, missing, failed or completed. A check
    /// just asked for usually shows as queued until it finishes.
    pub status: String,
    /// 0.0 to 1.0.
    pub progress: f64,
    /// qBittorrent's own state name, e.g. `checkingUP`.
    pub client_state: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DownloadRecord {
    client_hash: String,
}

/// The capability.
pub struct DownloadRecheck;

fn held(client: &Client, hash: &str, id: &str) -> Result<Torrent, Failure> {
    client.torrent(hash)?.ok_or_else(|| {
        Failure::NotFound(format!(
            "qBittorrent no longer holds torrent {hash} of download {id}; it was removed there, so there is nothing to recheck"
        ))
    })
}

impl Capability for DownloadRecheck {
    type Input = RecheckInput;
    type Output = RecheckOutput;

    const META: Meta = Meta {
        id: "download.recheck",
        version: 1,
        label: Label::Execute,
        summary: "Recheck and resume one download's torrent in qBittorrent",
        description: "Asks qBittorrent to verify the data of one download task's torrent on disk again and to resume it: the fix for a download whose files went missing and came back, or that stopped. Acts only on the torrent the download task recorded; never deletes, moves, re-sources or re-tags anything. When qBittorrent is already checking the torrent nothing is sent (rechecked false). Returns the torrent's status and progress right after the request; follow it with download.status.",
        tags: &["download", "qbittorrent", "torrent", "repair"],
        aliases: &[
            "recheck download",
            "verify torrent",
            "force recheck",
            "resume download",
            "重新校验",
            "校验下载",
            "恢复下载",
        ],
        // Rechecking and resuming again changes nothing the first did not.
        replay: Replay::Safe,
        services: &["qbittorrent"],
    };

    fn invoke(input: RecheckInput) -> Result<Outcome<RecheckOutput>, Failure> {
        let id = input.download_task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("downloadTaskId must not be empty".into()));
        }
        let record = domain::query("download.get", &json!({ "id": id }))?;
        let download: DownloadRecord = serde_json::from_value(record)
            .map_err(|e| Failure::Internal(format!("the domain store answered an unexpected download: {e}")))?;
        let hash = download.client_hash.as_str();
        let client = Client::connect()?;
        let before = held(&client, hash, id)?;
        let rechecked = !before.state().is_checking();
        if rechecked {
            client.recheck(&[hash])?;
            // A torrent that lost its files stays checking until resumed.
            client.resume(&[hash])?;
        }
        let after = held(&client, hash, id)?;
        Ok(Outcome::Succeeded(RecheckOutput {
            download_task_id: id.to_string(),
            client_hash: after.hash.clone(),
            rechecked,
            status: after.status().as_str().to_string(),
            progress: after.progress,
            client_state: after.raw_state,
        }))
    }
}

capstan_sdk::export_capability!(DownloadRecheck);
