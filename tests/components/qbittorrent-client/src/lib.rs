//! Test component `test.qbittorrent` (label execute): drives the SDK's
//! qBittorrent client through the host's outbound layer, one operation per
//! call, so the suites can show the host's form login, request bodies and
//! effect classes against a real qbittorrent-nox.

use capstan_sdk::qbittorrent::{AddTorrent, Client};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// The server's WebAPI version.
    Version,
    /// Uploads a `.torrent` file.
    Add {
        torrent: Vec<u8>,
        save_path: String,
        #[serde(default)]
        paused: bool,
        #[serde(default)]
        tags: Vec<String>,
    },
    /// One torrent's state and status.
    Torrent {
        hash: String,
    },
    Recheck {
        hash: String,
    },
    Pause {
        hash: String,
    },
    Resume {
        hash: String,
    },
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {
    pub result: serde_json::Value,
}

pub struct QbittorrentClient;

fn ok(result: serde_json::Value) -> Result<Outcome<Output>, Failure> {
    Ok(Outcome::Succeeded(Output { result }))
}

impl Capability for QbittorrentClient {
    type Input = Action;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.qbittorrent",
        version: 1,
        label: Label::Execute,
        summary: "Test component that drives qBittorrent through the SDK client",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Never,
        services: &["qbittorrent"],
    };

    fn invoke(action: Action) -> Result<Outcome<Output>, Failure> {
        let client = Client::connect()?;
        match action {
            Action::Version => ok(serde_json::json!(client.version().to_string())),
            Action::Add { torrent, save_path, paused, tags } => {
                let mut add = AddTorrent::file("capstan.torrent", torrent);
                add.save_path = Some(save_path);
                add.paused = paused;
                add.tags = tags;
                client.add(&add)?;
                ok(serde_json::json!("added"))
            }
            Action::Torrent { hash } => match client.torrent(&hash)? {
                None => Err(Failure::NotFound(format!("qBittorrent has no torrent {hash}"))),
                Some(t) => ok(serde_json::json!({
                    "name": t.name,
                    "state": t.raw_state,
                    "stopped": t.state().is_stopped(),
                    "status": t.status(),
                    "progress": t.progress,
                    "tags": t.tags,
                })),
            },
            Action::Recheck { hash } => {
                client.recheck(&[&hash])?;
                ok(serde_json::json!("rechecking"))
            }
            Action::Pause { hash } => {
                client.pause(&[&hash])?;
                ok(serde_json::json!("paused"))
            }
            Action::Resume { hash } => {
                client.resume(&[&hash])?;
                ok(serde_json::json!("resumed"))
            }
        }
    }
}

capstan_sdk::export_capability!(QbittorrentClient);
