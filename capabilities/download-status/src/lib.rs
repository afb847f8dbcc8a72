//! Capability `download.status` (label read): what the download client
//! (qBittorrent or Transmission, whichever is set up) says about
//! download tasks — status, progress, content path — read fresh from the
//! client and mapped to Capstan's download statuses. It writes nothing: the
//! host's sync task records what it reports.

use std::collections::HashMap;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{DownloadGet, DownloadsList, DownloadsListed};
use capstan_sdk::contract::records::DownloadTask;
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::downloads::{DownloadClient, SERVICES};
use capstan_sdk::host::domain;
use capstan_sdk::qbittorrent::{Torrent, TorrentFilter};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Download statuses that qBittorrent still decides; the default listing.
pub const ACTIVE_STATUSES: &[DownloadStatus] = &[
    DownloadStatus::Queued,
    DownloadStatus::Downloading,
    DownloadStatus::Stalled,
    DownloadStatus::Paused,
    DownloadStatus::Missing,
    DownloadStatus::Failed,
    DownloadStatus::Completed,
];
/// Most tasks read in one call.
pub const MAX_TASKS: usize = 500;
/// Hashes per `torrents/info` request, to keep the URL short.
const HASHES_PER_REQUEST: usize = 50;
/// qBittorrent's ETA for "not in any foreseeable time" (100 days).
const NO_ETA: i64 = 8_640_000;

/// Which downloads to read.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusInput {
    /// Download task ids. Default: every task that is queued, downloading,
    /// stalled, paused, missing, failed or completed.
    #[serde(default)]
    pub download_task_ids: Option<Vec<String>>,
}

/// One download as qBittorrent sees it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadState {
    pub download_task_id: String,
    pub client_hash: String,
    /// queued, downloading, stalled, paused, missing, failed or completed;
    /// missing also when qBittorrent does not hold the torrent at all.
    pub status: String,
    /// 0.0 to 1.0; the last recorded progress when the torrent is gone.
    pub progress: f64,
    /// qBittorrent's `content_path`, as it reports it (its own view of the
    /// file system); absent when the torrent is gone.
    pub content_path: Option<String>,
    /// qBittorrent's state name; absent when the torrent is gone.
    pub client_state: Option<String>,
    /// Bytes a second coming in now; absent when the torrent is gone.
    #[serde(default)]
    pub download_speed: Option<i64>,
    /// Seeds connected now; absent when the torrent is gone.
    #[serde(default)]
    pub seeds: Option<i64>,
    /// qBittorrent's estimate of the seconds left; absent when the torrent
    /// is gone or qBittorrent has none (it says 8640000 for "never").
    #[serde(default)]
    pub eta_seconds: Option<i64>,
}

/// Every download asked about, in the order asked (or most recently
/// changed first, for the default listing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatusOutput {
    pub downloads: Vec<DownloadState>,
}

fn tasks(input: &StatusInput) -> Result<Vec<DownloadTask>, Failure> {
    match &input.download_task_ids {
        Some(ids) => {
            if ids.is_empty() {
                return Err(Failure::InvalidInput(
                    "downloadTaskIds is empty; leave it out to read every active download".into(),
                ));
            }
            if ids.len() > MAX_TASKS {
                return Err(Failure::InvalidInput(format!("at most {MAX_TASKS} downloadTaskIds per call")));
            }
            ids.iter().map(|id| Ok(domain::call::<DownloadGet>(&ById::new(id.trim()))?)).collect()
        }
        None => {
            let mut all = Vec::new();
            for status in ACTIVE_STATUSES {
                let listed = DownloadsListed { status: Some(*status), limit: MAX_TASKS as i64 };
                all.extend(domain::call::<DownloadsList>(&listed)?);
            }
            all.truncate(MAX_TASKS);
            Ok(all)
        }
    }
}

/// The capability.
pub struct DownloadStatusCapability;

impl Capability for DownloadStatusCapability {
    type Input = StatusInput;
    type Output = StatusOutput;

    const META: Meta = Meta {
        id: "download.status",
        version: 1,
        label: Label::Read,
        summary: "Read download progress and status from the download client",
        description: "Reads the download client's (qBittorrent's or Transmission's) current view of download tasks: status (queued, downloading, stalled, paused, missing, failed, completed), progress, content path, the client's own state, download speed, connected seeds and estimated seconds left. Give downloadTaskIds, or leave them out for every download that is queued, downloading, stalled, paused, missing, failed or completed. A torrent the client no longer holds is reported missing. Writes nothing.",
        tags: &["download", "qbittorrent", "transmission", "torrent", "progress"],
        aliases: &[
            "download status",
            "download progress",
            "check downloads",
            "torrent status",
            "下载状态",
            "下载进度",
            "查看下载",
        ],
        replay: Replay::Safe,
        services: &SERVICES,
    };

    fn invoke(input: StatusInput) -> Result<Outcome<StatusOutput>, Failure> {
        let tasks = tasks(&input)?;
        if tasks.is_empty() {
            return Ok(Outcome::Succeeded(StatusOutput { downloads: Vec::new() }));
        }
        let client = DownloadClient::connect()?;
        let mut held: HashMap<String, Torrent> = HashMap::new();
        let hashes: Vec<String> = tasks.iter().map(|t| t.client_hash.to_ascii_lowercase()).collect();
        for chunk in hashes.chunks(HASHES_PER_REQUEST) {
            let filter = TorrentFilter { hashes: chunk.to_vec(), ..TorrentFilter::default() };
            for torrent in client.torrents(&filter)? {
                held.insert(torrent.hash.to_ascii_lowercase(), torrent);
            }
        }
        let downloads = tasks
            .into_iter()
            .map(|task| match held.get(&task.client_hash.to_ascii_lowercase()) {
                Some(t) => DownloadState {
                    download_task_id: task.id,
                    client_hash: task.client_hash,
                    status: t.status().as_str().to_string(),
                    progress: t.progress.clamp(0.0, 1.0),
                    content_path: Some(t.content_path.clone()).filter(|p| !p.is_empty()),
                    client_state: Some(t.raw_state.clone()),
                    download_speed: Some(t.dlspeed.max(0)),
                    seeds: Some(t.num_seeds.max(0)),
                    eta_seconds: Some(t.eta).filter(|eta| (0..NO_ETA).contains(eta)),
                },
                None => DownloadState {
                    download_task_id: task.id,
                    client_hash: task.client_hash,
                    status: DownloadStatus::Missing.as_str().into(),
                    progress: task.progress,
                    content_path: None,
                    client_state: None,
                    download_speed: None,
                    seeds: None,
                    eta_seconds: None,
                },
            })
            .collect();
        Ok(Outcome::Succeeded(StatusOutput { downloads }))
    }
}

capstan_sdk::export_capability!(DownloadStatusCapability);
