//! `evaluateAcquisition {slotId?}`: for each wanted slot (or the one given),
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

use capstan_quality::{QualityProfile, covers_season, offer, preferred};

use super::{call, episodes};
use crate::authz::AuthzError;
use crate::domain::{Entity, NewRelease, Slot, SourceRelease};
use crate::domain::{IdentityStatus, SlotStatus};
use crate::pipeline::Origin;
use crate::pipeline::Services;
use crate::pipeline::failed_attempt;
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

/// Whether a release's parsed fields fit the slot: the resolution when the
/// slot names one, and for series the season (a pack of several seasons
/// fits each of them).
fn fits(slot: &Slot, parsed: &Value) -> bool {
    let season_ok = match slot.season {
        None => true,
        Some(season) => covers_season(parsed, season) == Some(true),
    };
    resolution_fits(slot, parsed) && season_ok
}

/// Whether a release's resolution is the one the slot names (any, when
/// the slot names no resolution).
fn resolution_fits(slot: &Slot, parsed: &Value) -> bool {
    let quality = slot.quality.to_ascii_lowercase();
    match parsed.get("screen_size").and_then(Value::as_str) {
        _ if !quality.ends_with('p') => true,
        Some(size) => size.eq_ignore_ascii_case(&quality),
        None => false,
    }
}

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

async fn record(svc: &Services, task: &Task, found: &Value) -> Result<Option<SourceRelease>, String> {
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

/// The published quality profile the slot names, if it names one; `Err`
/// (inner) when it names a policy that is unpublished or not a profile, so
/// nothing is acquired against a policy nobody can read.
async fn quality_profile(svc: &Services, slot: &Slot) -> Result<Result<Option<QualityProfile>, String>, String> {
    let Some(name) = slot.profile.as_deref() else { return Ok(Ok(None)) };
    let policy = match svc.authz.published_policy(name).await {
        Ok(policy) => policy,
        Err(AuthzError::NotFound(..)) => return Ok(Err(format!("policy {name} has no published revision"))),
        Err(e) => return Err(e.to_string()),
    };
    match serde_json::from_value::<QualityProfile>(policy.body) {
        Ok(profile) if profile.problems().is_empty() => Ok(Ok(Some(profile))),
        Ok(profile) => {
            Ok(Err(format!("policy {name} is not a usable quality profile: {}", profile.problems().join("; "))))
        }
        Err(e) => Ok(Err(format!("policy {name} is not a quality profile: {e}"))),
    }
}

async fn evaluate_slot(svc: &Services, task: &Task, slot: &Slot) -> Result<Value, HandlerError> {
    let domain = &svc.domain;
    let entity = domain.entity(&slot.entity_id).await.map_err(|e| e.to_string())?;
    let known = match slot.season {
        Some(_) => domain.episodes(&entity.id).await.map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    let missing = slot.season.and_then(|season| episodes::missing(&known, season));
    if missing.as_ref().is_some_and(Vec::is_empty) {
        return Ok(json!({ "slotId": slot.id, "outcome": "nothing-missing" }));
    }
    let searched = call(svc, task, "release.search", search_input(&entity, slot, missing.as_deref())).await?;
    if searched.status != Status::Succeeded {
        return Ok(
            json!({ "slotId": slot.id, "outcome": "search-failed", "reason": failed_attempt("release.search", &searched).to_string() }),
        );
    }
    let profile = match quality_profile(svc, slot).await? {
        Ok(profile) => profile,
        Err(reason) => return Ok(json!({ "slotId": slot.id, "outcome": "policy-unusable", "reason": reason })),
    };
    let found = searched.output.unwrap_or_default();
    // A release whose plan for this slot failed (someone chose another) is
    // not picked for it again.
    let mut given_up = domain.failed_releases(&slot.id).await.map_err(|e| e.to_string())?;
    // A season fetched an episode at a time comes back wanted: what was
    // fetched for it already is not fetched again.
    if missing.is_some() {
        given_up.extend(domain.fetched_releases(&slot.id).await.map_err(|e| e.to_string())?);
    }
    let mut candidates: Vec<(i64, SourceRelease)> = Vec::new();
    let mut gifts = Vec::new();
    for item in found.get("releases").and_then(Value::as_array).into_iter().flatten() {
        let Some(mut release) = record(svc, task, item).await? else { continue };
        if given_up.contains(&release.id) {
            continue;
        }
        if release.identity_status == IdentityStatus::Unresolved {
            let input = json!({ "sourceReleaseId": release.id, "candidates": [{ "entityId": entity.id }] });
            let resolved = call(svc, task, "identity.resolve", input).await?;
            if resolved.status != Status::Succeeded {
                continue;
            }
            release = domain.release(&release.id).await.map_err(|e| e.to_string())?;
        }
        let ours = release.identity_status == IdentityStatus::Resolved
            && release.entity_id.as_deref() == Some(entity.id.as_str());
        if !ours {
            continue;
        }
        // A season whose episodes are known takes what gives it some of
        // them, an anime release's absolute numbers included; otherwise
        // the name must say the season.
        let fit = match (&missing, slot.season) {
            (Some(missing), Some(season)) => {
                resolution_fits(slot, &release.parsed)
                    && episodes::holds(&release.parsed, season, &known)
                        .map(|holds| gifts.push(episodes::gives(&holds, missing)))
                        .is_some()
            }
            _ => fits(slot, &release.parsed),
        };
        if fit {
            candidates.push((item.get("seeders").and_then(Value::as_i64).unwrap_or(0), release));
        }
    }
    if missing.is_some() {
        let keep = episodes::best(&gifts);
        candidates = candidates.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, c)| c).collect();
    }
    let chosen = match &profile {
        Some(profile) => {
            let offers: Vec<(usize, capstan_quality::Offer)> = candidates
                .iter()
                .enumerate()
                .map(|(i, (_, r))| (i, offer(&json!({ "title": r.title, "parsed": r.parsed, "size": r.size }))))
                .collect();
            preferred(Some(profile), &offers).map(|i| candidates[*i].1.clone())
        }
        // Ties go to the first found.
        None => candidates.iter().rev().max_by_key(|(seeders, _)| *seeders).map(|(_, r)| r.clone()),
    };
    let Some(release) = chosen else {
        let outcome = if candidates.is_empty() || profile.is_none() { "no-match" } else { "none-acceptable" };
        return Ok(json!({ "slotId": slot.id, "outcome": outcome, "candidates": candidates.len() }));
    };
    let planned = call(svc, task, "download.plan", json!({ "sourceReleaseId": release.id, "slotId": slot.id })).await?;
    if planned.status != Status::Succeeded {
        return Ok(
            json!({ "slotId": slot.id, "outcome": "not-planned", "reason": failed_attempt("download.plan", &planned).to_string() }),
        );
    }
    let plan = planned.output.unwrap_or_default();
    let plan_id = plan.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
    let submit = json!({ "planId": plan_id });
    // Drafting the same thing twice returns the first draft: a draft someone
    // else made (a person, an agent's plan-only run) is theirs to submit,
    // never the sweep's.
    let draft = domain.plan(&plan_id).await.map_err(|e| e.to_string())?;
    if draft.created_by != Origin::task(task).principal {
        let drafted_by = draft.created_by;
        return Ok(json!({ "slotId": slot.id, "outcome": "planned", "planId": plan_id, "draftedBy": drafted_by }));
    }
    // A submit that failed waits out its backoff; a service that passes
    // its Test, a changed setting or a person's "try again now" ends it.
    if let Some(retry_at) = draft.retry_at.filter(|at| *at > crate::store::now_ms()) {
        return Ok(json!({
            "slotId": slot.id, "outcome": "waiting-to-retry", "planId": plan_id,
            "reason": draft.last_failure, "failures": draft.submit_failures, "retryAt": retry_at,
        }));
    }
    // A background sweep submits only under a standing authorisation; it
    // never asks and never leaves a refusal behind.
    if !svc.caps.is_authorized(&Origin::task(task), "download.submit", &submit).await.map_err(|e| e.to_string())? {
        return Ok(json!({ "slotId": slot.id, "outcome": "planned", "planId": plan_id }));
    }
    let submitted = call(svc, task, "download.submit", submit).await?;
    match submitted.status {
        Status::Succeeded => {}
        // Counted on the plan and asked about by the invoke path; the other
        // slots are still looked at.
        Status::Failed => {
            let reason = failed_attempt("download.submit", &submitted).to_string();
            return Ok(json!({ "slotId": slot.id, "outcome": "submit-failed", "planId": plan_id, "reason": reason }));
        }
        // An outcome nobody knows is settled by the ledger when the task
        // runs again, never guessed.
        _ => return Err(failed_attempt("download.submit", &submitted)),
    }
    Ok(json!({ "slotId": slot.id, "outcome": "submitted", "planId": plan_id, "submit": submitted.output }))
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
            let slots = match &payload.slot_id {
                Some(id) => vec![svc.domain.slot(id).await.map_err(|e| e.to_string())?],
                None => svc.domain.slots_with_status(SlotStatus::Wanted, 50).await.map_err(|e| e.to_string())?,
            };
            let mut results = Vec::new();
            for slot in slots.iter().filter(|s| s.status == SlotStatus::Wanted) {
                results.push(evaluate_slot(&svc, &task, slot).await?);
            }
            Ok(json!({ "slots": results }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(season: Option<i64>, quality: &str) -> Slot {
        Slot {
            id: "slot".into(),
            entity_id: "entity".into(),
            season,
            quality: quality.into(),
            profile: None,
            status: SlotStatus::Wanted,
            revision: 1,
            created_at: 0,
        }
    }

    #[test]
    fn a_season_pack_fits_each_season_it_holds() {
        let pack = json!({"screen_size": "1080p", "season": 1, "seasons": [1, 2, 3]});
        assert!(fits(&slot(Some(2), "1080p"), &pack));
        assert!(!fits(&slot(Some(4), "1080p"), &pack));
        assert!(!fits(&slot(Some(2), "720p"), &pack));
        let one = json!({"screen_size": "1080p", "season": 2, "episodes": [3]});
        assert!(fits(&slot(Some(2), "1080p"), &one) && !fits(&slot(Some(1), "1080p"), &one));
    }
}
