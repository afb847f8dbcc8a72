//! `evaluateAcquisition {slotId?}`: for each wanted slot due a search (new,
//! an episode aired since its last search, a failed submit to retry; see
//! `Domain::slots_due_for_search`) or the one given,
//! search the indexers for the slot's entity, record what they offer with
//! the fields its name says, resolve each release's identity, keep those
//! that are this entity at the slot's quality (and season), draft a plan for
//! the best one, and submit it only when an approval or grant covers the
//! submission. Without one, the draft waits for a human and nothing else is
//! opened. A submit that fails is counted on the plan and asked about by
//! the invoke path; the sweep tries it again once its backoff has passed,
//! and never picks again a release whose plan for the slot failed. The best one: when the slot names a quality policy (its
//! `profile`, e.g. `quality.movies`), the published profile's choice among
//! the releases it accepts — judged exactly as `policy.preview` judges —
//! else the most seeded. A season whose episodes are recorded is searched
//! for what it lacks ([`super::episodes`]): the one missing episode, or
//! the season, and the releases that give the most missing episodes are the
//! ones chosen among; a release already fetched for the slot is not
//! fetched again.

use serde::Deserialize;
use serde_json::{Value, json};

use super::call;
use super::choose::{self, Need, quality_profile};
use crate::domain::{Entity, IdentityStatus, NewRelease, Slot, SlotStatus, SourceRelease};
use crate::pipeline::{Services, failed_attempt};
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

pub(crate) struct EvaluateAcquisition(pub Services);

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Payload {
    #[serde(default)]
    slot_id: Option<String>,
}

/// How many search results are looked at per slot.
const RESULTS_PER_SLOT: u64 = 25;

fn search_input(entity: &Entity, slot: &Slot, missing: Option<&[i64]>) -> Value {
    let mut input = json!({ "query": entity.title, "kind": entity.kind, "limit": RESULTS_PER_SLOT });
    if let Some(tmdb) = entity.tmdb_id {
        input["tmdb_id"] = json!(tmdb);
    }
    if let Some(season) = slot.season {
        input["season"] = json!(season);
    }
    if let Some([episode]) = missing {
        input["episode"] = json!(episode);
    }
    input
}

pub(super) async fn record(svc: &Services, task: &Task, found: &Value) -> Result<Option<SourceRelease>, String> {
    let Some(title) = found.get("title").and_then(Value::as_str) else { return Ok(None) };
    let inspected = call(svc, task, "release.inspect", json!({ "name": title })).await?;
    let parsed = if inspected.status == Status::Succeeded { inspected.output.unwrap_or_default() } else { json!({}) };
    let new = NewRelease {
        indexer: found["indexers"].get(0).and_then(Value::as_str).unwrap_or("torznab").to_string(),
        title: title.to_string(),
        parsed,
        size: found.get("size_bytes").and_then(Value::as_i64),
        infohash: found.get("infohash").and_then(Value::as_str).map(str::to_string),
        // Both links as the indexer gave them: the submit prefers the
        // `.torrent` (its metadata needs no swarm) and keeps the magnet's
        // trackers when there is no file.
        download_url: found.get("download_url").and_then(Value::as_str).map(str::to_string),
        magnet_url: found.get("magnet_url").and_then(Value::as_str).map(str::to_string),
    };
    match svc.domain.record_release(&new).await {
        Ok(release) => Ok(Some(release)),
        // A listing without a usable hash or link is skipped, not fatal.
        Err(crate::domain::DomainError::Invalid(_)) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

async fn evaluate_slot(svc: &Services, task: &Task, slot: &Slot) -> Result<Value, HandlerError> {
    // Nothing is searched for against a policy nobody can read; the slot
    // stays due, and is searched once the policy is published.
    let profile = match quality_profile(svc, slot).await? {
        Ok(profile) => profile,
        Err(reason) => return Ok(json!({ "slotId": slot.id, "outcome": "policy-unusable", "reason": reason })),
    };
    let need = Need::load(svc, slot, profile.clone()).await?;
    if !need.worth_searching() {
        return Ok(json!({ "slotId": slot.id, "outcome": "nothing-missing" }));
    }
    let input = search_input(&need.entity, slot, need.missing.as_deref());
    let searched = call(svc, task, "release.search", input).await?;
    if searched.status != Status::Succeeded {
        return Ok(
            json!({ "slotId": slot.id, "outcome": "search-failed", "reason": failed_attempt("release.search", &searched).to_string() }),
        );
    }
    // A search that failed is made again by the next sweep.
    svc.domain.mark_searched(&slot.id).await.map_err(|e| e.to_string())?;
    let found = searched.output.unwrap_or_default();
    let mut offered = Vec::new();
    for item in found.get("releases").and_then(Value::as_array).into_iter().flatten() {
        let Some(release) = record(svc, task, item).await? else { continue };
        let Some(release) = resolve(svc, task, release, std::slice::from_ref(&need.entity.id)).await? else { continue };
        if release.entity_id.as_deref() != Some(need.entity.id.as_str()) {
            continue;
        }
        if let Some(gift) = need.gift(&release) {
            offered.push((item.get("seeders").and_then(Value::as_i64).unwrap_or(0), release, gift));
        }
    }
    choose::act(svc, task, slot, offered, profile.as_ref()).await
}

/// `release` with its identity resolved among `candidates` (the library's
/// titles when none are named) when it was not yet; `None` when it stays
/// unresolved or ambiguous.
pub(super) async fn resolve(
    svc: &Services,
    task: &Task,
    mut release: SourceRelease,
    candidates: &[String],
) -> Result<Option<SourceRelease>, String> {
    if release.identity_status == IdentityStatus::Unresolved {
        let mut input = json!({ "sourceReleaseId": release.id });
        // Without candidates the library's titles are scored.
        if !candidates.is_empty() {
            input["candidates"] = candidates.iter().map(|id| json!({ "entityId": id })).collect();
        }
        let resolved = call(svc, task, "identity.resolve", input).await?;
        if resolved.status != Status::Succeeded {
            return Ok(None);
        }
        release = svc.domain.release(&release.id).await.map_err(|e| e.to_string())?;
    }
    Ok((release.identity_status == IdentityStatus::Resolved).then_some(release))
}

impl TaskHandler for EvaluateAcquisition {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move {
            let payload: Payload = if task.payload.as_object().is_some_and(|o| o.is_empty()) {
                Payload::default()
            } else {
                serde_json::from_value(task.payload.clone())
                    .map_err(|e| HandlerError::GiveUp(format!("payload does not fit evaluateAcquisition: {e}")))?
            };
            let (slots, drafted) = match &payload.slot_id {
                Some(id) => (vec![svc.domain.slot(id).await.map_err(|e| e.to_string())?], Vec::new()),
                // Searched when due; the rest wait for the feeds
                // (`syncFeeds`) or for someone to ask. A draft of the
                // sweep's own goes on to its submit without a search.
                None => {
                    let due = svc.domain.slots_due_for_search(50).await.map_err(|e| e.to_string())?;
                    let principals: Vec<String> =
                        super::SWEEP_PRINCIPALS.iter().map(|k| crate::principal::task(k)).collect();
                    let principals: Vec<&str> = principals.iter().map(String::as_str).collect();
                    let drafted = svc.domain.drafted_by(&principals, 50).await.map_err(|e| e.to_string())?;
                    (due, drafted)
                }
            };
            let mut results = Vec::new();
            for slot in slots.iter().filter(|s| s.status == SlotStatus::Wanted) {
                results.push(evaluate_slot(&svc, &task, slot).await?);
            }
            for (slot, plan_id) in drafted.iter().filter(|(slot, _)| !slots.iter().any(|s| s.id == slot.id)) {
                results.push(choose::submit(&svc, &task, slot, plan_id).await?);
            }
            Ok(json!({ "slots": results }))
        })
    }
}
