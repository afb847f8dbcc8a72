//! `syncFeeds`: each indexer's newest releases (its RSS feed, through
//! `release.search`'s `recent`) matched against everything wanted at once,
//! instead of a search per wanted slot. A release the store already knows
//! was matched when it was first seen and is passed over. A new one whose
//! listing names a TMDB id no wanted title has is passed over too; the
//! rest are recorded, their identity resolved (against the one wanted
//! title their TMDB id names, else the library's titles), and offered to
//! each slot of their title open to releases: a wanted one, or a satisfied
//! one under a quality profile, which a PROPER of a file it holds fixes. Each slot offered something goes on as
//! a search for it would ([`super::choose::act`]): choose, plan, and submit
//! under a standing grant.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::call;
use super::choose::{self, Need, Offer, quality_profile};
use super::evaluate::{record, resolve};
use crate::domain::Entity;
use crate::pipeline::{Services, failed_attempt};
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

pub(crate) struct SyncFeeds(pub Services);

/// Most releases read from the feeds in one sync.
const FEED_LIMIT: u64 = 100;
/// Most wanted slots matched in one sync (the sweep's own bound is 50).
const MAX_WANTED: i64 = 1000;

/// The wanted title a listing's TMDB id names, when it names one: `Some(None)`
/// when it names an id no wanted title has (nothing to match), `None` when
/// it names none.
fn named_by_id<'a>(item: &Value, wanted: &'a [Entity]) -> Option<Option<&'a Entity>> {
    let id = item.get("tmdb_id").and_then(Value::as_i64)?;
    Some(wanted.iter().find(|e| e.tmdb_id == Some(id)))
}

async fn sync(svc: &Services, task: &Task) -> Result<Value, HandlerError> {
    let domain = &svc.domain;
    let slots = domain.slots_open_to_releases(MAX_WANTED).await.map_err(|e| e.to_string())?;
    if slots.is_empty() {
        return Ok(json!({ "outcome": "nothing-wanted" }));
    }
    let searched = call(svc, task, "release.search", json!({ "recent": true, "limit": FEED_LIMIT })).await?;
    if searched.status != Status::Succeeded {
        let reason = failed_attempt("release.search", &searched).to_string();
        return Ok(json!({ "outcome": "feed-failed", "reason": reason }));
    }
    let wanted = domain.entities_open_to_releases(MAX_WANTED).await.map_err(|e| e.to_string())?;
    let found = searched.output.unwrap_or_default();
    let items: Vec<&Value> = found.get("releases").and_then(Value::as_array).into_iter().flatten().collect();
    // Each slot's need, or why its profile cannot be used.
    let mut needs: BTreeMap<String, Result<Need, String>> = BTreeMap::new();
    let mut offered: BTreeMap<String, Vec<Offer>> = BTreeMap::new();
    let mut fresh = 0;
    for item in &items {
        // A hash the store cannot read is not one it knows; recording the
        // release says what is wrong with it.
        let known = match item.get("infohash").and_then(Value::as_str) {
            Some(hash) => matches!(domain.release_by_infohash(hash).await, Ok(Some(_))),
            // A tracker's feed may list a torrent by its link alone.
            None => {
                let indexer = item["indexers"].get(0).and_then(Value::as_str).unwrap_or("torznab");
                match item.get("download_url").and_then(Value::as_str) {
                    Some(link) => matches!(domain.release_by_link(indexer, link).await, Ok(Some(_))),
                    None => false,
                }
            }
        };
        let named = named_by_id(item, &wanted);
        if known || matches!(named, Some(None)) {
            continue;
        }
        fresh += 1;
        let Some(release) = record(svc, task, item).await? else { continue };
        let candidates: Vec<String> = named.flatten().map(|e| e.id.clone()).into_iter().collect();
        let Some(release) = resolve(svc, task, release, &candidates).await? else { continue };
        let Some(entity_id) = release.entity_id.clone() else { continue };
        for slot in slots.iter().filter(|s| s.entity_id == entity_id) {
            if !needs.contains_key(&slot.id) {
                let need = match quality_profile(svc, slot).await? {
                    Ok(profile) => Ok(Need::load(svc, slot, profile).await?),
                    Err(reason) => Err(reason),
                };
                needs.insert(slot.id.clone(), need);
            }
            let Ok(need) = &needs[&slot.id] else { continue };
            if let Some(gift) = need.gift(&release) {
                let seeders = item.get("seeders").and_then(Value::as_i64).unwrap_or(0);
                offered.entry(slot.id.clone()).or_default().push((seeders, release.clone(), gift));
            }
        }
    }
    let mut results = Vec::new();
    for (slot_id, need) in &needs {
        match need {
            Ok(need) => {
                if let Some(offers) = offered.remove(slot_id) {
                    results.push(choose::act(svc, task, &need.slot, offers, need.profile()).await?);
                }
            }
            Err(reason) => results.push(json!({ "slotId": slot_id, "outcome": "policy-unusable", "reason": reason })),
        }
    }
    Ok(json!({ "releases": items.len(), "new": fresh, "slots": results }))
}

impl TaskHandler for SyncFeeds {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move { sync(&svc, &task).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::EntityKind;

    fn entity(id: &str, tmdb: i64) -> Entity {
        Entity {
            id: id.into(),
            kind: EntityKind::Tv,
            tmdb_id: Some(tmdb),
            title: id.into(),
            original_title: None,
            year: None,
            seasons: json!([]),
        }
    }

    #[test]
    fn a_listed_tmdb_id_narrows_the_match_to_that_title_or_to_none() {
        let wanted = [entity("a", 1), entity("b", 2)];
        assert_eq!(named_by_id(&json!({"tmdb_id": 2}), &wanted).map(|e| e.map(|e| e.id.as_str())), Some(Some("b")));
        assert!(matches!(named_by_id(&json!({"tmdb_id": 3}), &wanted), Some(None)), "no wanted title has it");
        assert!(named_by_id(&json!({"title": "x"}), &wanted).is_none(), "no id: the library decides");
    }
}
