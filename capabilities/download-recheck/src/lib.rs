//! Capability `download.recheck` (label execute): repairs one download's
//! torrent in the download client (qBittorrent or Transmission) as an
//! operator would. `recheck` (the default) asks the client to verify the data on disk again — the fix for a
//! torrent whose files went missing and came back — and starts it again
//! unless someone had stopped it; `resume` starts a torrent that errored or
//! stalled. It acts only on a download Capstan manages that is not removed,
//! only while the client reports it missing, failed, stalled or paused,
//! and only on the torrent the download task recorded (by its client
//! hash); it never deletes, moves, re-sources, re-categorises or re-tags
//! anything, and never resumes a torrent a person or a share limit paused.
//! Replay `never`: a request whose outcome is unknown is left for a human,
//! not sent again.

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::DownloadGet;
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::downloads::{DownloadClient, SERVICES};
use capstan_sdk::host::domain;
use capstan_sdk::qbittorrent::Torrent;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// What to do to the torrent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Verify the data on disk again, then start it unless it was stopped.
    #[default]
    Recheck,
    /// Start a torrent that errored or stalled; never one that was paused.
    Resume,
}

/// The statuses (as qBittorrent reports the torrent) a download is
/// repaired from.
pub const REPAIRABLE: &[DownloadStatus] =
    &[DownloadStatus::Missing, DownloadStatus::Failed, DownloadStatus::Stalled, DownloadStatus::Paused];

/// Which download to recheck.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecheckInput {
    /// The download task (from `download.submit` or `download.status`).
    pub download_task_id: String,
    /// `recheck` (default) or `resume`.
    #[serde(default)]
    pub action: Action,
}

/// The torrent as qBittorrent reports it right after the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecheckOutput {
    pub download_task_id: String,
    pub client_hash: String,
    pub action: Action,
    /// False when qBittorrent was already checking the data: asking again
    /// mid-check can leave it checking for good, so nothing was sent.
    pub rechecked: bool,
    /// Whether the torrent was started.
    pub resumed: bool,
    /// queued, downloading, stalled, missing, failed or completed. A check
    /// just asked for usually shows as queued until it finishes.
    pub status: String,
    /// 0.0 to 1.0.
    pub progress: f64,
    /// qBittorrent's own state name, e.g. `checkingUP`.
    pub client_state: String,
}

/// The capability.
pub struct DownloadRecheck;

fn held(client: &DownloadClient, hash: &str, id: &str) -> Result<Torrent, Failure> {
    client.torrent(hash)?.ok_or_else(|| {
        Failure::NotFound(format!(
            "{} no longer holds torrent {hash} of download {id}; it was removed there, so there is nothing to recheck",
            client.name()
        ))
    })
}

impl Capability for DownloadRecheck {
    type Input = RecheckInput;
    type Output = RecheckOutput;

    const META: Meta = Meta {
        id: "download.recheck",
        version: 2,
        label: Label::Execute,
        summary: "Recheck or resume one download's torrent in the download client",
        description: "Repairs one download task's torrent in the download client (qBittorrent or Transmission). action recheck (default): verify the data on disk again and start the torrent unless someone had stopped it; the fix for files that went missing and came back. action resume: start a torrent that errored or stalled. Acts only on a download Capstan manages that is not removed, only while qBittorrent reports it missing, failed, stalled or paused (anything else is a conflict: there is nothing to repair), and only on the torrent the task recorded. Never deletes, moves, re-sources, re-categorises or re-tags anything, and never resumes a torrent paused by a person or a share limit. When the client is already checking the torrent nothing is sent (rechecked false). Returns the torrent's status right after; follow it with download.status.",
        tags: &["download", "qbittorrent", "transmission", "torrent", "repair", "policy.automation"],
        aliases: &[
            "recheck download",
            "verify torrent",
            "force recheck",
            "resume download",
            "重新校验",
            "校验下载",
            "恢复下载",
        ],
        // A request whose outcome nobody knows is a human's to look at: the
        // torrent may already be checking, and asking again mid-check can
        // leave it checking for good.
        replay: Replay::Never,
        services: &SERVICES,
    };

    fn invoke(input: RecheckInput) -> Result<Outcome<RecheckOutput>, Failure> {
        let id = input.download_task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("downloadTaskId must not be empty".into()));
        }
        let download = domain::call::<DownloadGet>(&ById::new(id))?;
        if download.status == DownloadStatus::Removed {
            return Err(Failure::Conflict(format!("download {id} was removed; there is nothing to repair")));
        }
        let hash = download.client_hash.as_str();
        let client = DownloadClient::connect()?;
        let before = held(&client, hash, id)?;
        let status = before.status();
        if !REPAIRABLE.contains(&status) && !before.state().is_checking() {
            return Err(Failure::Conflict(format!(
                "{} reports download {id} {}; there is nothing to repair (only a missing, failed, stalled or paused one)",
                client.name(),
                status.as_str()
            )));
        }
        let stopped = before.state().is_stopped();
        let (rechecked, resumed) = match input.action {
            Action::Recheck if before.state().is_checking() => (false, false),
            Action::Recheck => {
                client.recheck(&[hash])?;
                // A torrent that lost its files stays checking until it is
                // started; one someone stopped stays stopped.
                if !stopped {
                    client.resume(&[hash])?;
                }
                (true, !stopped)
            }
            Action::Resume if stopped => {
                return Err(Failure::Conflict(format!(
                    "the torrent of download {id} is paused (by a person or a share limit); resume it in {} if that is wanted",
                    client.name()
                )));
            }
            Action::Resume if status == DownloadStatus::Paused || before.state().is_checking() => (false, false),
            Action::Resume => {
                client.resume(&[hash])?;
                (false, true)
            }
        };
        let after = held(&client, hash, id)?;
        Ok(Outcome::Succeeded(RecheckOutput {
            download_task_id: id.to_string(),
            client_hash: after.hash.clone(),
            action: input.action,
            rechecked,
            resumed,
            status: after.status().as_str().to_string(),
            progress: after.progress,
            client_state: after.raw_state,
        }))
    }
}

capstan_sdk::export_capability!(DownloadRecheck);
