//! `refreshSeries`: what TMDB says of each wanted series, read again — its
//! seasons, and the episodes (numbers, titles, air dates) of the seasons
//! still wanted — so episodes announced after a season was wanted are
//! recorded and wanted with it, and a moved air date moves when the sweep
//! searches. Through `catalog.lookup` (a read, so no grant is needed);
//! the store keeps each episode's monitoring and file. The longest
//! unrefreshed series go first, a bounded number a run.

use serde_json::{Value, json};

use super::call;
use crate::domain::{Entity, EntityKind, NewEntity, NewEpisode, SlotStatus};
use crate::pipeline::{Services, failed_attempt};
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

pub(crate) struct RefreshSeries(pub Services);

/// Series read again in one run.
const PER_RUN: i64 = 25;

/// `catalog.lookup`'s answer for `input`, or why there is none.
async fn lookup(svc: &Services, task: &Task, input: Value) -> Result<Result<Value, String>, String> {
    let inv = call(svc, task, "catalog.lookup", input).await?;
    Ok(match inv.status {
        Status::Succeeded => Ok(inv.output.unwrap_or_default()),
        _ => Err(failed_attempt("catalog.lookup", &inv).to_string()),
    })
}

/// The entity as TMDB's details and seasons now say, with the episodes of
/// `seasons`; `Err` with the reason when TMDB did not answer.
async fn read_again(
    svc: &Services,
    task: &Task,
    entity: &Entity,
    seasons: &[i64],
) -> Result<Result<NewEntity, String>, String> {
    let Some(tmdb_id) = entity.tmdb_id else { return Ok(Err("no TMDB id".into())) };
    let details = match lookup(svc, task, json!({ "action": "details", "kind": "tv", "tmdb_id": tmdb_id })).await? {
        Ok(details) => details,
        Err(reason) => return Ok(Err(reason)),
    };
    let listed: Vec<Value> = details["seasons"].as_array().cloned().unwrap_or_default();
    let mut episodes = Vec::new();
    for season in seasons.iter().filter(|n| listed.iter().any(|s| s["season_number"].as_i64() == Some(**n))) {
        let input = json!({ "action": "season", "tmdb_id": tmdb_id, "season": season });
        let read = match lookup(svc, task, input).await? {
            Ok(read) => read,
            Err(reason) => return Ok(Err(reason)),
        };
        for e in read["episodes"].as_array().into_iter().flatten() {
            let Some(episode) = e["episode_number"].as_i64() else { continue };
            episodes.push(NewEpisode {
                season: *season,
                episode,
                title: e["name"].as_str().map(str::to_string),
                air_date: e["air_date"].as_str().map(str::to_string),
            });
        }
    }
    Ok(Ok(NewEntity {
        kind: EntityKind::Tv,
        tmdb_id: Some(tmdb_id),
        title: details["title"].as_str().unwrap_or(&entity.title).to_string(),
        original_title: details["original_title"].as_str().map(str::to_string),
        year: details["year"].as_i64().or(entity.year),
        seasons: listed
            .iter()
            .map(|s| json!({ "number": s["season_number"], "episodeCount": s["episode_count"] }))
            .collect(),
        episodes,
    }))
}

async fn refresh(svc: &Services, task: &Task) -> Result<Value, HandlerError> {
    let domain = &svc.domain;
    let mut results = Vec::new();
    for entity in domain.series_to_refresh(PER_RUN).await.map_err(|e| e.to_string())? {
        let seasons: Vec<i64> = domain
            .slots_for_entity(&entity.id)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|s| s.status != SlotStatus::Unwanted)
            .filter_map(|s| s.season)
            .collect();
        let outcome = match read_again(svc, task, &entity, &seasons).await? {
            Ok(new) => {
                let count = new.episodes.len();
                match domain.upsert_entity(&new).await {
                    Ok(_) => json!({ "entityId": entity.id, "outcome": "refreshed", "episodes": count }),
                    Err(e) => json!({ "entityId": entity.id, "outcome": "not-recorded", "reason": e.to_string() }),
                }
            }
            Err(reason) => json!({ "entityId": entity.id, "outcome": "lookup-failed", "reason": reason }),
        };
        results.push(outcome);
    }
    Ok(json!({ "series": results }))
}

impl TaskHandler for RefreshSeries {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move { refresh(&svc, &task).await })
    }
}
