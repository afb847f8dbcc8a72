//! The submit flow: read the plan, reserve it, find or add its torrent in
//! qBittorrent, record it as submitted — and `verify`, which answers from
//! the same records whether an interrupted submit took effect.
//!
//! Order matters. Reserving first means a plan whose slot moved on adds
//! nothing. Looking the torrent up before adding means a re-run (after a
//! crash between adding and recording, or a repeated request) never adds
//! it twice: by infohash when the plan has one, else by the plan's tag.

use capstan_sdk::host::{Level, Request, domain, log, outbound, setting};
use capstan_sdk::qbittorrent::{AddTorrent, Client, Torrent, TorrentFilter};
use capstan_sdk::{Failure, HostError, Verification};
use serde::Deserialize;
use serde_json::json;

use crate::source;
use crate::{SubmitInput, SubmitOutput};

/// The category used when the operator sets none.
pub const DEFAULT_CATEGORY: &str = "capstan";

/// The part of a plan record this flow reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanRecord {
    status: String,
    payload: Payload,
}

/// What the plan froze about its release.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Payload {
    title: Option<String>,
    infohash: Option<String>,
    download_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DownloadRecord {
    id: String,
    client_hash: String,
}

fn plan_id(input: &SubmitInput) -> Result<&str, Failure> {
    let id = input.plan_id.trim();
    if id.is_empty() {
        return Err(Failure::InvalidInput("planId must not be empty".into()));
    }
    Ok(id)
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, value: serde_json::Value) -> Result<T, Failure> {
    serde_json::from_value(value)
        .map_err(|e| Failure::Internal(format!("the domain store answered an unexpected {what}: {e}")))
}

fn plan(id: &str) -> Result<PlanRecord, Failure> {
    decode("plan", domain::query("plan.get", &json!({ "id": id }))?)
}

/// The tag that marks a plan's torrent in qBittorrent.
pub fn plan_tag(plan_id: &str) -> String {
    format!("plan:{plan_id}")
}

/// The torrent qBittorrent already holds for this plan, if any.
fn existing(client: &Client, infohash: Option<&str>, tag: &str) -> Result<Option<Torrent>, HostError> {
    match infohash {
        Some(hash) => client.torrent(hash),
        None => {
            let filter = TorrentFilter { tag: Some(tag.to_string()), ..TorrentFilter::default() };
            Ok(client.torrents(&filter)?.into_iter().next())
        }
    }
}

/// A magnet link for `hash`, named after the release so qBittorrent shows a
/// readable name while it fetches the metadata.
pub fn magnet(hash: &str, title: Option<&str>) -> String {
    let mut link = format!("magnet:?xt=urn:btih:{hash}");
    if let Some(title) = title.filter(|t| !t.trim().is_empty()) {
        link.push_str("&dn=");
        for byte in title.trim().bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => link.push(byte as char),
                _ => link.push_str(&format!("%{byte:02X}")),
            }
        }
    }
    link
}

/// Fetches a `.torrent` file through an indexer service.
fn fetch_torrent(req: Request) -> Result<Vec<u8>, Failure> {
    let service = req.service.clone();
    let resp = outbound::read(req)?;
    if resp.status != 200 {
        return Err(Failure::Unavailable(format!("indexer {service} answered {} for the torrent file", resp.status)));
    }
    // Every torrent file is a bencoded dictionary; an HTML error page or a
    // redirect body is not worth sending to qBittorrent.
    if resp.body.first() != Some(&b'd') {
        return Err(Failure::Unavailable(format!("indexer {service} did not send a torrent file")));
    }
    Ok(resp.body)
}

/// What to hand qBittorrent: the `.torrent` file when a configured indexer
/// serves it (no metadata wait, works without DHT), else a magnet from the
/// infohash, else the download URL for qBittorrent to fetch.
fn what_to_add(payload: &Payload, infohash: Option<&str>) -> Result<AddTorrent, Failure> {
    let sources = source::parse(setting("torrent_sources").as_deref())?;
    let url = payload.download_url.as_deref().map(str::trim).filter(|u| !u.is_empty());
    if let Some(req) = url.and_then(|u| source::request_for(u, &sources)) {
        match fetch_torrent(req) {
            Ok(bytes) => {
                let name = infohash.unwrap_or("release");
                return Ok(AddTorrent::file(format!("{name}.torrent"), bytes));
            }
            // The magnet still names the same torrent.
            Err(e) if infohash.is_some() => {
                log(Level::Warn, &format!("fetching the torrent file failed ({e}); adding by magnet instead"));
            }
            Err(e) => return Err(e),
        }
    }
    match (infohash, url) {
        (Some(hash), _) => Ok(AddTorrent::url(magnet(hash, payload.title.as_deref()))),
        (None, Some(url)) => Ok(AddTorrent::url(url)),
        (None, None) => Err(Failure::InvalidInput(
            "the plan's release has neither an infohash nor a download URL; nothing can be added".into(),
        )),
    }
}

fn normalised_hash(payload: &Payload) -> Option<String> {
    payload.infohash.as_deref().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty())
}

/// `download.submit`.
pub fn run(input: &SubmitInput) -> Result<SubmitOutput, Failure> {
    let id = plan_id(input)?;
    let plan = plan(id)?;
    let infohash = normalised_hash(&plan.payload);
    if infohash.is_none() && plan.payload.download_url.as_deref().is_none_or(|u| u.trim().is_empty()) {
        return Err(Failure::InvalidInput(format!(
            "plan {id}'s release has neither an infohash nor a download URL; nothing can be added"
        )));
    }
    // A conflict here (the slot moved on, the plan ended) stops everything
    // before qBittorrent is touched.
    domain::transition("plan.reserve", &json!({ "planId": id }))?;

    let client = Client::connect()?;
    let tag = plan_tag(id);
    let (client_hash, added) = match existing(&client, infohash.as_deref(), &tag)? {
        Some(torrent) => (torrent.hash, false),
        None if plan.status == "submitted" => {
            // Recorded as submitted, yet gone from qBittorrent: someone
            // removed it. Adding it back is a new decision, not a retry.
            return Err(Failure::Conflict(format!(
                "plan {id} was submitted but qBittorrent no longer holds its torrent; draft a new plan to download it again"
            )));
        }
        None => {
            let mut add = what_to_add(&plan.payload, infohash.as_deref())?;
            add.tags = vec![tag.clone()];
            let category = setting("category").map(|c| c.trim().to_string()).filter(|c| !c.is_empty());
            add.category = Some(category.unwrap_or_else(|| DEFAULT_CATEGORY.to_string()));
            add.save_path = setting("save_path").map(|p| p.trim().to_string()).filter(|p| !p.is_empty());
            client.add(&add)?;
            let hash = match infohash.clone() {
                Some(hash) => hash,
                // Without an infohash only qBittorrent knows it, once it
                // has read the torrent; the tag finds it on the next run.
                None => existing(&client, None, &tag)?.map(|t| t.hash).ok_or_else(|| {
                    Failure::Unavailable(format!(
                        "qBittorrent accepted the torrent but does not list it yet; run download.submit again for plan {id} (it finds the torrent by its tag {tag} and adds nothing twice)"
                    ))
                })?,
            };
            (hash, true)
        }
    };

    let answer = domain::transition("plan.submitted", &json!({ "planId": id, "clientHash": client_hash }))?;
    let download: DownloadRecord = decode("download", answer.get("download").cloned().unwrap_or_default())?;
    Ok(SubmitOutput {
        plan_id: id.to_string(),
        download_task_id: download.id,
        client_hash: download.client_hash,
        added,
    })
}

/// `verify`: submitted and held by qBittorrent is done; not yet submitted
/// is not done (running again is safe, see [`run`]); anything that cannot
/// be read is cannot-tell.
pub fn verify(input: &SubmitInput) -> Result<Verification<SubmitOutput>, Failure> {
    let id = plan_id(input)?;
    let plan = match plan(id) {
        Ok(plan) => plan,
        Err(Failure::NotFound(m)) => return Err(Failure::NotFound(m)),
        Err(e) => return Ok(Verification::CannotTell(format!("cannot read plan {id}: {e}"))),
    };
    if plan.status != "submitted" {
        return Ok(Verification::NotDone);
    }
    let download = match domain::query("download.for-plan", &json!({ "id": id })) {
        Ok(value) if !value.is_null() => decode::<DownloadRecord>("download", value)?,
        Ok(_) => return Ok(Verification::CannotTell(format!("plan {id} is submitted but has no download task"))),
        Err(e) => return Ok(Verification::CannotTell(format!("cannot read plan {id}'s download: {e}"))),
    };
    let held = Client::connect().and_then(|client| client.torrent(&download.client_hash));
    Ok(match held {
        Ok(Some(_)) => Verification::Done(SubmitOutput {
            plan_id: id.to_string(),
            download_task_id: download.id,
            client_hash: download.client_hash,
            added: false,
        }),
        Ok(None) => Verification::CannotTell(format!(
            "plan {id} is submitted but qBittorrent does not hold torrent {}",
            download.client_hash
        )),
        Err(e) => Verification::CannotTell(format!("cannot ask qBittorrent: {e}")),
    })
}
