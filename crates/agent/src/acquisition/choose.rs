//! What a slot will take, and what the sweep does once releases are
//! offered for it (by a search for it, or by an indexer's feed): keep the
//! releases that give it the most of what it lacks or would upgrade,
//! choose one — the slot's quality profile's choice, else the most seeded
//! — draft a plan, and submit it only under a standing authorisation. A
//! draft someone else made is theirs; a submit that failed waits out its
//! backoff. A file the slot holds is replaced only under a profile: by a
//! better resolution while it is below the cutoff, or by a PROPER/REPACK
//! of itself ([`capstan_quality::upgrade`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use capstan_quality::{QualityProfile, covers_season, offer_of, preferred};

use super::episodes::Holds;

use super::{call, episodes};
use crate::authz::AuthzError;
use crate::domain::{Entity, Episode, EpisodeState, Slot, SourceRelease};
use crate::pipeline::{Origin, Services, failed_attempt};
use crate::runtime::Status;
use crate::tasks::{HandlerError, Task};

/// A release offered for a slot: its seeders, the release, and what it
/// gives the slot ([`Need::gift`]).
pub(super) type Offer = (i64, SourceRelease, (usize, bool));

/// A slot with what it lacks, what it holds, and what it will not take again.
pub(super) struct Need {
    pub slot: Slot,
    pub entity: Entity,
    /// The profile that judges upgrades (none: nothing held is replaced).
    profile: Option<QualityProfile>,
    /// The series' episodes (none for a movie).
    known: Vec<Episode>,
    /// For a season whose episodes are recorded: those missing.
    pub missing: Option<Vec<i64>>,
    /// What the slot holds, by episode (0 for a movie's file): the offer
    /// of the release each file came from, where that is recorded.
    held: BTreeMap<i64, capstan_quality::Offer>,
    /// Releases not to pick for it again: the blocklisted ones, those whose
    /// plan for it failed, and for a season fetched an episode at a time,
    /// those it fetched.
    given_up: Vec<String>,
}

impl Need {
    pub async fn load(svc: &Services, slot: &Slot, profile: Option<QualityProfile>) -> Result<Need, String> {
        let domain = &svc.domain;
        let entity = domain.entity(&slot.entity_id).await.map_err(|e| e.to_string())?;
        let known = match slot.season {
            Some(_) => domain.episodes(&entity.id).await.map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        let missing = slot.season.and_then(|season| episodes::missing(&known, season));
        let mut given_up = domain.failed_releases(&slot.id).await.map_err(|e| e.to_string())?;
        given_up.extend(domain.blocked_for_entity(&entity.id).await.map_err(|e| e.to_string())?);
        if missing.is_some() {
            given_up.extend(domain.fetched_releases(&slot.id).await.map_err(|e| e.to_string())?);
        }
        // Upgrades are judged only under a profile.
        let mut held = BTreeMap::new();
        if profile.is_some() {
            let files: Vec<(i64, &str)> = match slot.season {
                None if slot.file.is_some() => slot.file_release_id.as_deref().map(|r| (0, r)).into_iter().collect(),
                None => Vec::new(),
                Some(season) => known
                    .iter()
                    .filter(|e| e.season == season && e.state == EpisodeState::Have)
                    .filter_map(|e| Some((e.episode, e.file_release_id.as_deref()?)))
                    .collect(),
            };
            let mut offers: BTreeMap<&str, capstan_quality::Offer> = BTreeMap::new();
            for (key, release_id) in files {
                if !offers.contains_key(release_id) {
                    let release = domain.release(release_id).await.map_err(|e| e.to_string())?;
                    offers.insert(release_id, offer_of(&release.title, &release.parsed, release.size));
                }
                held.insert(key, offers[release_id].clone());
            }
        }
        Ok(Need { slot: slot.clone(), entity, profile, known, missing, held, given_up })
    }

    /// The profile it is judged by.
    pub fn profile(&self) -> Option<&QualityProfile> {
        self.profile.as_ref()
    }

    /// Whether a search is worth making for it: something is missing, or a
    /// file it holds is below the cutoff. (A PROPER is left to the feeds.)
    pub fn worth_searching(&self) -> bool {
        let below = |o: &capstan_quality::Offer| self.profile.as_ref().is_some_and(|p| !p.meets_cutoff(o));
        let lacks = match (&self.missing, self.slot.season) {
            (Some(missing), _) => !missing.is_empty(),
            // A movie without a file, or a season without recorded episodes.
            (None, _) => self.slot.file.is_none() || self.slot.season.is_some(),
        };
        lacks || self.held.values().any(below)
    }

    /// Whether `release` would replace the file held under `key`.
    fn upgrades(&self, key: i64, release: &capstan_quality::Offer) -> bool {
        match (&self.profile, self.held.get(&key)) {
            (Some(profile), Some(held)) => profile.upgrade(held, release).is_some(),
            _ => false,
        }
    }

    /// What `release` (this entity's) gives the slot: how many missing or
    /// upgraded episodes and whether it is a whole season; `None` when it
    /// does not fit (another resolution or season, or given up) or gives
    /// nothing. A season whose episodes are known takes what gives it some
    /// of them, an anime release's absolute numbers included; otherwise the
    /// name must say the season. A movie with a file takes only an upgrade
    /// of it.
    pub fn gift(&self, release: &SourceRelease) -> Option<(usize, bool)> {
        if self.given_up.contains(&release.id) {
            return None;
        }
        let offered = offer_of(&release.title, &release.parsed, release.size);
        match (&self.missing, self.slot.season) {
            (Some(missing), Some(season)) => {
                if !resolution_fits(&self.slot, &release.parsed) {
                    return None;
                }
                let holds = episodes::holds(&release.parsed, season, &self.known)?;
                let (filled, pack) = episodes::gives(&holds, missing);
                let upgraded = self
                    .held
                    .keys()
                    .filter(|e| match &holds {
                        Holds::Season => true,
                        Holds::Episodes(list) => list.contains(e),
                    })
                    .filter(|e| self.upgrades(**e, &offered))
                    .count();
                Some((filled + upgraded, pack)).filter(|(given, _)| *given > 0)
            }
            _ if !fits(&self.slot, &release.parsed) => None,
            (_, None) if self.slot.file.is_some() => self.upgrades(0, &offered).then_some((1, false)),
            _ => Some((1, false)),
        }
    }
}

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

/// The published quality profile the slot names, if it names one; `Err`
/// (inner) when it names a policy that is unpublished or not a profile, so
/// nothing is acquired against a policy nobody can read.
pub(super) async fn quality_profile(
    svc: &Services,
    slot: &Slot,
) -> Result<Result<Option<QualityProfile>, String>, String> {
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

/// Chooses among `offered` — (seeders, release, what it gives) — for
/// `slot` and acts on the choice: the releases giving the most are kept,
/// then the profile's choice among them, else the most seeded.
pub(super) async fn act(
    svc: &Services,
    task: &Task,
    slot: &Slot,
    offered: Vec<Offer>,
    profile: Option<&QualityProfile>,
) -> Result<Value, HandlerError> {
    let gifts: Vec<(usize, bool)> = offered.iter().map(|(_, _, gift)| *gift).collect();
    let keep = episodes::best(&gifts);
    let candidates: Vec<(i64, SourceRelease)> = offered
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, (seeders, release, _))| (seeders, release))
        .collect();
    let chosen = match profile {
        Some(profile) => {
            let offers: Vec<(usize, capstan_quality::Offer)> =
                candidates.iter().enumerate().map(|(i, (_, r))| (i, offer_of(&r.title, &r.parsed, r.size))).collect();
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
    submit(svc, task, slot, &plan_id).await
}

/// Submits the sweep's draft `plan_id` for `slot` when a standing
/// authorisation covers it and no backoff holds it back.
pub(super) async fn submit(svc: &Services, task: &Task, slot: &Slot, plan_id: &str) -> Result<Value, HandlerError> {
    let submit = json!({ "planId": plan_id });
    // Drafting the same thing twice returns the first draft: a draft someone
    // else made (a person, an agent's plan-only run) is theirs to submit,
    // never the sweep's.
    let draft = svc.domain.plan(plan_id).await.map_err(|e| e.to_string())?;
    if !super::SWEEP_PRINCIPALS.iter().any(|kind| draft.created_by == crate::principal::task(kind)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SlotStatus;

    fn slot(season: Option<i64>, quality: &str) -> Slot {
        Slot {
            id: "slot".into(),
            entity_id: "entity".into(),
            season,
            quality: quality.into(),
            profile: None,
            status: SlotStatus::Wanted,
            file: None,
            file_release_id: None,
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
