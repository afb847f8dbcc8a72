//! Capability `download.submit` (label execute): acts on an acquisition
//! plan — reserves its slot, hands the torrent to qBittorrent, records the
//! download task. It is written to be re-run: the torrent is looked up in
//! qBittorrent before anything is added, so a second run after a crash or a
//! repeated request adds nothing twice, and `verify` tells from the plan and
//! qBittorrent whether an interrupted run took effect.
//!
//! [`submit`] owns the flow and the plan records it reads, [`source`] what
//! a release is handed to qBittorrent as: the indexer's `.torrent` fetched
//! through the indexer, its magnet as given, or a last-resort magnet.

pub mod source;
pub mod submit;

#[cfg(test)]
mod tests;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};
use serde::{Deserialize, Serialize};

/// Every service this component may use: the download clients, and the indexers a
/// `.torrent` file may be fetched from ([`source::SOURCE_SERVICES`]).
pub const SERVICES: &[&str] =
    &["qbittorrent", "transmission", "torznab", "torznab-2", "torznab-3", "rss", "rss-2", "rss-3"];

/// Which plan to submit.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitInput {
    /// The acquisition plan (from `download.plan`).
    pub plan_id: String,
}

/// What was submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmitOutput {
    pub plan_id: String,
    /// The download task that follows the torrent from now on.
    pub download_task_id: String,
    /// The torrent's infohash in qBittorrent.
    pub client_hash: String,
    /// Whether this call added the torrent to qBittorrent; false when it was
    /// already there (a repeated or resumed submit). `verify` reports false
    /// too, because it cannot tell which call added it.
    pub added: bool,
}

/// The capability.
pub struct DownloadSubmit;

impl Capability for DownloadSubmit {
    type Input = SubmitInput;
    type Output = SubmitOutput;

    const META: Meta = Meta {
        id: "download.submit",
        version: 1,
        label: Label::Execute,
        summary: "Submit an acquisition plan: reserve its slot and add its torrent to qBittorrent, once",
        description: "Acts on a drafted acquisition plan (see download.plan): reserves the plan's slot (a conflict when the slot changed since the plan was drafted, and then nothing is added), looks the torrent up in qBittorrent by its infohash and adds it only when it is not there yet — from the indexer's .torrent file (fetched through the indexer service whose address the download link is on, with its key), else by the indexer's magnet link as given, else by a download link on another server, else by a magnet built from the infohash (no trackers; the plan's handOff says so); an indexer refusing the link fails the submit with its reason before qBittorrent is touched — tagged plan:<planId>, in the configured category and save path; then records the plan as submitted with a download task. Running it again for the same plan adds nothing and returns the same download task. Needs an approval of the plan or an automation grant unless a person calls it.",
        tags: &["download", "policy.acquisition", "plan:acquisition", "qbittorrent", "torrent"],
        aliases: &[
            "submit download",
            "start download",
            "send to qbittorrent",
            "add torrent",
            "提交下载",
            "开始下载",
            "添加种子",
            "下载",
        ],
        replay: Replay::Verify,
        services: SERVICES,
    };

    fn invoke(input: SubmitInput) -> Result<Outcome<SubmitOutput>, Failure> {
        Ok(Outcome::Succeeded(submit::run(&input)?))
    }

    fn verify(input: SubmitInput) -> Result<Verification<SubmitOutput>, Failure> {
        submit::verify(&input)
    }
}

capstan_sdk::export_capability!(DownloadSubmit);
