//! The submit flow: read the plan, find its torrent in the download client
//! (qBittorrent or Transmission, [`DownloadClient`]) or what
//! to add, reserve the plan, add the torrent, record it as submitted — and
//! `verify`, which answers from the same records whether an interrupted
//! submit took effect.
//!
//! Order matters. Reads come first — the torrent looked up in the client,
//! the indexer's `.torrent` fetched — so an indexer or client that fails
//! fails the call before anything changed, never leaving it unknown.
//! Reserving before adding means a plan whose slot moved on adds nothing.
//! Looking the torrent up before adding means a re-run (after a crash
//! between adding and recording, or a repeated request) never adds it
//! twice: by infohash when the plan has one, else by the plan's tag.

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{DownloadForPlan, PlanGet};
use capstan_sdk::contract::ops::transitions::{PlanRef, PlanReserve, PlanSubmit, PlanSubmitted};
use capstan_sdk::contract::status::PlanStatus;
use capstan_sdk::downloads::DownloadClient;
use capstan_sdk::host::{Level, domain, log, setting};
use capstan_sdk::qbittorrent::{AddTorrent, Torrent, TorrentFilter};
use capstan_sdk::{Failure, HostError, Verification};
use serde::Deserialize;

use crate::source;
use crate::{SubmitInput, SubmitOutput};

/// The category used when the operator sets none.
pub const DEFAULT_CATEGORY: &str = "capstan";

/// A plan and what it froze about its release.
struct PlanRecord {
    status: PlanStatus,
    payload: Payload,
}

/// What the plan froze about its release.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Payload {
    title: Option<String>,
    /// The indexer service that listed the release.
    indexer: Option<String>,
    infohash: Option<String>,
    download_url: Option<String>,
    magnet_url: Option<String>,
}

fn plan_id(input: &SubmitInput) -> Result<&str, Failure> {
    let id = input.plan_id.trim();
    if id.is_empty() {
        return Err(Failure::InvalidInput("planId must not be empty".into()));
    }
    Ok(id)
}

fn plan(id: &str) -> Result<PlanRecord, Failure> {
    let plan = domain::call::<PlanGet>(&ById::new(id))?;
    let payload = serde_json::from_value(plan.payload)
        .map_err(|e| Failure::Internal(format!("plan {id}'s payload is not a release's: {e}")))?;
    Ok(PlanRecord { status: plan.status, payload })
}

/// The tag that marks a plan's torrent in qBittorrent.
pub fn plan_tag(plan_id: &str) -> String {
    format!("plan:{plan_id}")
}

/// The torrent qBittorrent already holds for this plan, if any.
fn existing(client: &DownloadClient, infohash: Option<&str>, tag: &str) -> Result<Option<Torrent>, HostError> {
    match infohash {
        Some(hash) => client.torrent(hash),
        None => {
            let filter = TorrentFilter { tag: Some(tag.to_string()), ..TorrentFilter::default() };
            Ok(client.torrents(&filter)?.into_iter().next())
        }
    }
}

/// What to hand qBittorrent (see [`source`] for the order).
fn what_to_add(payload: &Payload, infohash: Option<&str>) -> Result<AddTorrent, Failure> {
    if setting("torrent_sources").is_some() {
        log(
            Level::Warn,
            "setting torrent_sources is no longer read: a download link on a configured indexer's address is fetched through that indexer",
        );
    }
    source::what_to_add(&source::Links {
        indexer: payload.indexer.as_deref(),
        title: payload.title.as_deref(),
        infohash,
        download_url: payload.download_url.as_deref(),
        magnet_url: payload.magnet_url.as_deref(),
    })
}

fn normalised_hash(payload: &Payload) -> Option<String> {
    payload.infohash.as_deref().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty())
}

/// What a submit does once everything is read.
enum Step {
    /// qBittorrent holds the torrent already (a repeated or resumed submit).
    Held(Torrent),
    Add(AddTorrent),
}

/// `download.submit`.
pub fn run(input: &SubmitInput) -> Result<SubmitOutput, Failure> {
    let id = plan_id(input)?;
    let plan = plan(id)?;
    let infohash = normalised_hash(&plan.payload);
    let blank = |l: &Option<String>| l.as_deref().is_none_or(|u| u.trim().is_empty());
    if infohash.is_none() && blank(&plan.payload.download_url) && blank(&plan.payload.magnet_url) {
        return Err(Failure::InvalidInput(format!(
            "plan {id}'s release has neither an infohash nor a download link; nothing can be added"
        )));
    }
    // Everything that only reads comes first — the client's list, the
    // indexer's file — so a client or indexer that fails changes nothing.
    let client = DownloadClient::connect()?;
    let tag = plan_tag(id);
    let step = match existing(&client, infohash.as_deref(), &tag)? {
        Some(torrent) => Step::Held(torrent),
        None if plan.status == PlanStatus::Submitted => {
            // Recorded as submitted, yet gone from qBittorrent: someone
            // removed it. Adding it back is a new decision, not a retry.
            return Err(Failure::Conflict(format!(
                "plan {id} was submitted but {} no longer holds its torrent; draft a new plan to download it again",
                client.name()
            )));
        }
        None => Step::Add(what_to_add(&plan.payload, infohash.as_deref())?),
    };
    // A conflict here (the slot moved on, the plan ended) stops everything
    // before anything is added.
    domain::call::<PlanReserve>(&PlanRef { plan_id: id.to_string() })?;

    let (client_hash, added) = match step {
        Step::Held(torrent) => (torrent.hash, false),
        Step::Add(mut add) => {
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
                        "{} accepted the torrent but does not list it yet; run download.submit again for plan {id} (it finds the torrent by its tag {tag} and adds nothing twice)",
                        client.name()
                    ))
                })?,
            };
            (hash, true)
        }
    };

    let submitted = domain::call::<PlanSubmitted>(&PlanSubmit { plan_id: id.to_string(), client_hash })?;
    let download = submitted.download;
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
    if plan.status != PlanStatus::Submitted {
        return Ok(Verification::NotDone);
    }
    let download = match domain::call::<DownloadForPlan>(&ById::new(id)) {
        Ok(Some(download)) => download,
        Ok(None) => return Ok(Verification::CannotTell(format!("plan {id} is submitted but has no download task"))),
        Err(e) => return Ok(Verification::CannotTell(format!("cannot read plan {id}'s download: {e}"))),
    };
    let client = DownloadClient::connect();
    let name = client.as_ref().map_or("the download client", |c| c.name());
    let held = client.as_ref().map_err(Clone::clone).and_then(|client| client.torrent(&download.client_hash));
    Ok(match held {
        Ok(Some(_)) => Verification::Done(SubmitOutput {
            plan_id: id.to_string(),
            download_task_id: download.id,
            client_hash: download.client_hash,
            added: false,
        }),
        Ok(None) => Verification::CannotTell(format!(
            "plan {id} is submitted but {name} does not hold torrent {}",
            download.client_hash
        )),
        Err(e) => Verification::CannotTell(format!("cannot ask {name}: {e}")),
    })
}
