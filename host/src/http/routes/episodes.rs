//! A wanted series' episodes over HTTP: `GET
//! /api/v1/library/titles/{entityId}/episodes` (every episode recorded, with
//! where it stands today) and `PUT
//! /api/v1/library/titles/{entityId}/seasons/{season}/episodes` (want or
//! stop wanting a season's episodes, all or some). The change is a call of
//! `library.want` through the one invoke path, as `titles` makes its own.
//! `POST /api/v1/library/titles/{entityId}/search` asks for a search of the
//! indexers now for each of the title's wanted slots (the sweep otherwise
//! searches a slot only when it is new or an episode of it aired, and
//! leaves the rest to the indexers' feeds).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use capstan_contract::records::{Entity, Episode, Slot};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::openapi::path::{Parameter, ParameterIn};

use super::library::domain_error;
use super::titles::{entity_id, want};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::runtime::EffectClass;
use crate::tasks::Task;

/// A series' episodes.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct EpisodeList {
    episodes: Vec<Episode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityEpisodesPath {
    entity_id: String,
}

impl utoipa::IntoParams for EntityEpisodesPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = crate::http::schema::not_blank();
        vec![crate::http::schema::parameter("entityId", ParameterIn::Path, "Library entity id", schema)]
    }
}

/// Every episode recorded for a series, in season and episode order.
#[utoipa::path(get, path = "/api/v1/library/titles/{entityId}/episodes", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(EntityEpisodesPath),
    responses((status = 200, description = "The episodes, each with its state today", body = EpisodeList),
              (status = 400, description = "A blank entity id", body = ErrorBody),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "No such entity", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(path): ApiPath<EntityEpisodesPath>,
) -> Result<Json<EpisodeList>, ApiError> {
    let id = entity_id(path.entity_id)?;
    let episodes = state.services().domain.episodes(&id).await.map_err(domain_error)?;
    Ok(Json(EpisodeList { episodes }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SeasonPath {
    entity_id: String,
    season: u32,
}

impl utoipa::IntoParams for SeasonPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let entity = crate::http::schema::not_blank();
        let season = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).maximum(Some(u32::MAX)).build();
        vec![
            crate::http::schema::parameter("entityId", ParameterIn::Path, "Library entity id", entity),
            crate::http::schema::parameter("season", ParameterIn::Path, "Season number; 0 holds the specials", season),
        ]
    }
}

/// Which episodes of the season to want, or stop wanting.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EpisodesChange {
    /// `true` to want them, `false` to stop.
    monitored: bool,
    /// Episode numbers; without it, every episode of the season.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 10000)]
    episodes: Option<Vec<u32>>,
}

/// A season after a change: the title, its slots, the season's episodes.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct SeasonEpisodes {
    entity: Entity,
    slots: Vec<Slot>,
    episodes: Vec<Episode>,
}

/// Wants or stops wanting episodes of a season. A satisfied season whose
/// newly wanted episode has aired and is missing is wanted again.
#[utoipa::path(put, path = "/api/v1/library/titles/{entityId}/seasons/{season}/episodes", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(SeasonPath),
    request_body = EpisodesChange,
    responses((status = 200, description = "The title, its slots and the season's episodes", body = SeasonEpisodes),
              (status = 400, description = "A blank entity id", body = ErrorBody),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not allowed for this caller", body = ErrorBody),
              (status = 404, description = "No such entity, season or episode", body = ErrorBody),
              (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn change(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<SeasonPath>,
    ApiJson(body): ApiJson<EpisodesChange>,
) -> Result<(StatusCode, Json<SeasonEpisodes>), ApiError> {
    let id = entity_id(path.entity_id)?;
    let input = json!({"action": "monitor", "entityId": id, "season": path.season,
        "episodes": body.episodes, "monitored": body.monitored});
    want(&state, &caller, input, false).await
}

/// The searches queued.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SearchesQueued {
    /// One `evaluateAcquisition` task per wanted slot (one already queued
    /// for a slot is answered, not queued twice).
    tasks: Vec<Task>,
}

/// Searches the indexers now for each of the title's wanted slots.
#[utoipa::path(post, path = "/api/v1/library/titles/{entityId}/search", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(EntityEpisodesPath),
    responses((status = 202, description = "A search task per wanted slot", body = SearchesQueued),
              (status = 400, description = "A blank entity id", body = ErrorBody),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key lacks the execute scope", body = ErrorBody),
              (status = 404, description = "No such entity", body = ErrorBody),
              (status = 409, description = "Nothing of it is wanted", body = ErrorBody)))]
pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<EntityEpisodesPath>,
) -> Result<(StatusCode, Json<SearchesQueued>), ApiError> {
    let id = entity_id(path.entity_id)?;
    caller.origin(EffectClass::Execute, "searching for a title now", crate::store::new_id())?;
    let domain = &state.services().domain;
    let entity = domain.entity(&id).await.map_err(domain_error)?;
    let wanted: Vec<Slot> = domain
        .slots_for_entity(&id)
        .await
        .map_err(domain_error)?
        .into_iter()
        .filter(|s| s.status == crate::domain::SlotStatus::Wanted)
        .collect();
    if wanted.is_empty() {
        let message = format!("nothing of {} is wanted: want it first", entity.title);
        return Err(ApiError::new(StatusCode::CONFLICT, "conflict", message));
    }
    let mut tasks = Vec::new();
    for slot in &wanted {
        let payload = json!({ "slotId": slot.id });
        let key = format!("{}:{}", crate::acquisition::EVALUATE_ACQUISITION, slot.id);
        let queued = crate::acquisition::enqueue(
            domain.tasks(),
            crate::acquisition::EVALUATE_ACQUISITION,
            Some(&slot.id),
            payload,
            &key,
        )
        .await
        .map_err(ApiError::internal)?;
        tasks.push(queued);
    }
    super::audit_change(&state, &caller, "title.search", &id, "succeeded", None).await?;
    Ok((StatusCode::ACCEPTED, Json(SearchesQueued { tasks })))
}
