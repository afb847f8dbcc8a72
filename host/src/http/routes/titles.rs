//! The titles the library wants, over HTTP: `POST /api/v1/library/titles`
//! (want a movie or a series' seasons by TMDB id), `PATCH
//! /api/v1/library/titles/{entityId}` (another quality or profile, or
//! `wanted: false`) and `DELETE /api/v1/library/titles/{entityId}`. Each is
//! a call of `library.want` through the one invoke path, as the caller: a
//! console administrator's is a human's; an API key needs the execute
//! scope and, being automated, a grant or approval that covers it. The
//! call's failure becomes the status a client expects (404 for an unknown
//! TMDB id, 409 for a title already wanted, 422 for bad input).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use capstan_contract::ops::transitions::WantedTitle;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::openapi::path::{Parameter, ParameterIn};

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::{ApiPath, ApiQuery};
use crate::http::openapi::ErrorBody;
use crate::pipeline::InvokeError;
use crate::runtime::{EffectClass, Status};

const CAPABILITY: &str = "library.want";

/// Calls `library.want` as the caller and answers as a resource would:
/// its output read as `T`.
pub(crate) async fn want<T: serde::de::DeserializeOwned>(
    state: &AppState,
    caller: &Caller,
    input: Value,
    created: bool,
) -> Result<(StatusCode, Json<T>), ApiError> {
    call_as_resource(state, caller, CAPABILITY, "changing what the library wants", input, created).await
}

/// Calls `capability` (an execute one) as the caller, for `why`, and
/// answers as a resource would: its output read as `T`, its failure as the
/// status a client expects (422 bad input, 404, 409, 403, 503).
pub(crate) async fn call_as_resource<T: serde::de::DeserializeOwned>(
    state: &AppState,
    caller: &Caller,
    capability: &str,
    why: &str,
    input: Value,
    created: bool,
) -> Result<(StatusCode, Json<T>), ApiError> {
    let origin = caller.origin(EffectClass::Execute, why, crate::store::new_id())?;
    let inv = match state.caps().invoke(&origin, capability, &input).await {
        Ok(inv) => inv,
        Err(InvokeError::NotFound(id)) => return Err(ApiError::internal(format!("capability {id} is not loaded"))),
        Err(e) => return Err(ApiError::internal(e)),
    };
    match (inv.status, &inv.error) {
        (Status::Succeeded, _) => {
            let status = if created { StatusCode::CREATED } else { StatusCode::OK };
            // The capability answers the contract's record as JSON; read
            // back, it is the same document.
            let title: T = serde_json::from_value(inv.output.unwrap_or(Value::Null))
                .map_err(|e| ApiError::internal(format!("{capability} answered something unexpected: {e}")))?;
            Ok((status, Json(title)))
        }
        (Status::Failed, Some(e)) => {
            let (status, code) = match e.kind.as_str() {
                "invalid-input" => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
                "not-found" => (StatusCode::NOT_FOUND, "not_found"),
                "conflict" => (StatusCode::CONFLICT, "conflict"),
                "denied" => (StatusCode::FORBIDDEN, "forbidden"),
                "unavailable" => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            };
            Err(ApiError::new(status, code, e.message.clone()))
        }
        (status, _) => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "uncertain",
            format!("the change ended {status:?}; look before trying again"),
        )),
    }
}

/// A quality name: 1 to 64 characters, not all white space.
fn quality_schema() -> utoipa::openapi::Object {
    let mut schema = crate::http::schema::not_blank();
    schema.max_length = Some(64);
    schema
}

/// A profile: a `quality.*` policy's name, at most 64 characters.
fn profile_schema() -> utoipa::openapi::Object {
    profile_matching("^quality\\.", "A quality.* policy that judges releases")
}

/// A new profile for a wanted title, or an empty text to clear it.
fn profile_change_schema() -> utoipa::openapi::Object {
    profile_matching("^(quality\\.|$)", "A quality.* policy; an empty text clears it")
}

fn profile_matching(pattern: &str, description: &str) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .max_length(Some(64))
        .description(Some(description))
        .build()
}

fn value_of(schema: utoipa::openapi::Object) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// A title to want.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct NewTitle {
    tmdb_id: i64,
    kind: String,
    quality: String,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    seasons: Option<Vec<u32>>,
}

impl crate::http::schema::WrittenOut for NewTitle {
    const NAME: &'static str = "NewTitle";

    fn json() -> Value {
        let mut quality = value_of(quality_schema());
        quality["description"] = json!("`2160p`, `1080p`, `720p`, ...");
        json!({
            "description": "A title to want: a movie, or a series' seasons.",
            "type": "object",
            "additionalProperties": false,
            "required": ["tmdbId", "kind", "quality"],
            "properties": {
                "tmdbId": {"type": "integer", "format": "int64", "minimum": 1, "maximum": i64::MAX,
                    "description": "The TMDB id (from `catalog.lookup`'s search)."},
                "kind": {"type": "string", "enum": ["movie", "tv"]},
                "quality": quality,
                "profile": value_of(profile_schema()),
                "seasons": {"type": ["array", "null"], "minItems": 1,
                    "items": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                    "description": "For a series, the seasons to want (default: all but the specials); a movie has none."},
            },
            // A movie has no seasons to pick.
            "if": {"required": ["kind"], "properties": {"kind": {"const": "movie"}}},
            "then": {"properties": {"seasons": {"type": "null"}}},
        })
    }
}

impl utoipa::PartialSchema for NewTitle {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for NewTitle {}

/// Wants a movie or a series' seasons.
#[utoipa::path(post, path = "/api/v1/library/titles", tag = "library", security(("apiKey" = []), ("consoleSession" = [])),
    request_body = NewTitle,
    responses((status = 201, description = "The entity and the slots opened", body = WantedTitle),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key's scopes, or no grant or approval covers an automated caller", body = ErrorBody),
              (status = 404, description = "TMDB has no such title", body = ErrorBody),
              (status = 409, description = "Already wanted, being fetched or in the library", body = ErrorBody),
              (status = 422, description = "Invalid body", body = ErrorBody),
              (status = 503, description = "TMDB is not set up or cannot be reached", body = ErrorBody)))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewTitle>,
) -> Result<(StatusCode, Json<WantedTitle>), ApiError> {
    let input = json!({"action": "add", "tmdbId": body.tmdb_id, "kind": body.kind, "quality": body.quality,
        "profile": body.profile, "seasons": body.seasons});
    want(&state, &caller, input, true).await
}

/// A change to a wanted title: a new quality or profile, or `wanted: false`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum TitleChange {
    Stop(StopWanting),
    Change(QualityChange),
}

/// Stops wanting the title.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StopWanting {
    #[schema(schema_with = crate::http::schema::only_false)]
    #[allow(dead_code)] // Read only to tell the two shapes apart.
    wanted: NotWanted,
}

/// `false`, and nothing else.
pub(crate) struct NotWanted;

impl<'de> Deserialize<'de> for NotWanted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match bool::deserialize(d)? {
            false => Ok(NotWanted),
            true => Err(serde::de::Error::custom("wanted can only be false: a wanted title is changed, not re-wanted")),
        }
    }
}

/// A new quality, profile, or both.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QualityChange {
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    quality: Option<String>,
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    profile: Option<String>,
}

impl crate::http::schema::WrittenOut for QualityChange {
    const NAME: &'static str = "QualityChange";

    fn json() -> Value {
        json!({
            "description": "A new quality, profile, or both.",
            "type": "object",
            "additionalProperties": false,
            "minProperties": 1,
            "properties": {
                "quality": value_of(quality_schema()),
                "profile": value_of(profile_change_schema()),
            },
        })
    }
}

impl utoipa::PartialSchema for QualityChange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for QualityChange {}

/// A library entity's id, in a path: not blank, as `library.want` checks
/// it; a blank one is a path that does not fit (400).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityPath {
    entity_id: String,
}

impl EntityPath {
    fn id(self) -> Result<String, ApiError> {
        entity_id(self.entity_id)
    }
}

/// A library entity id from a path: not blank (400 otherwise).
pub(crate) fn entity_id(entity_id: String) -> Result<String, ApiError> {
    if entity_id.trim().is_empty() {
        let refusal = ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", "entityId must not be blank");
        return Err(refusal.about("entityId"));
    }
    Ok(entity_id)
}

impl utoipa::IntoParams for EntityPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = crate::http::schema::not_blank();
        vec![crate::http::schema::parameter("entityId", ParameterIn::Path, "Library entity id", schema)]
    }
}

/// Changes a wanted title's quality or profile, or stops wanting it.
#[utoipa::path(patch, path = "/api/v1/library/titles/{entityId}", tag = "library", security(("apiKey" = []), ("consoleSession" = [])),
    params(EntityPath),
    request_body = TitleChange,
    responses((status = 200, description = "The entity and its slots after the change", body = WantedTitle),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not allowed for this caller", body = ErrorBody),
              (status = 404, description = "No such entity, or nothing of it is wanted", body = ErrorBody),
              (status = 409, description = "A download for it is in progress", body = ErrorBody),
              (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn change(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(entity): ApiPath<EntityPath>,
    ApiJson(body): ApiJson<TitleChange>,
) -> Result<(StatusCode, Json<WantedTitle>), ApiError> {
    let entity_id = entity.id()?;
    let input = match body {
        TitleChange::Stop(_) => json!({"action": "remove", "entityId": entity_id}),
        TitleChange::Change(QualityChange { quality: None, profile: None }) => {
            let message = "give a quality, a profile, or wanted: false";
            return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message));
        }
        TitleChange::Change(QualityChange { quality, profile }) => {
            let mut input = json!({"action": "change", "entityId": entity_id, "quality": quality});
            if let Some(p) = profile {
                input["profile"] = Value::from(p);
            }
            input
        }
    };
    want(&state, &caller, input, false).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveQuery {
    season: Option<u32>,
}

impl utoipa::IntoParams for RemoveQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        // A season number as the query string is read: a `u32`.
        let schema = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).maximum(Some(u32::MAX)).build();
        vec![crate::http::schema::parameter("season", ParameterIn::Query, "Only this season", schema)]
    }
}

/// Stops wanting a title, or one season of it.
#[utoipa::path(delete, path = "/api/v1/library/titles/{entityId}", tag = "library", security(("apiKey" = []), ("consoleSession" = [])),
    params(EntityPath, RemoveQuery),
    responses((status = 200, description = "The entity and its slots after the change", body = WantedTitle),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not allowed for this caller", body = ErrorBody),
              (status = 404, description = "No such entity, or nothing of it is wanted", body = ErrorBody),
              (status = 409, description = "A download for it is in progress", body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(entity): ApiPath<EntityPath>,
    ApiQuery(q): ApiQuery<RemoveQuery>,
) -> Result<(StatusCode, Json<WantedTitle>), ApiError> {
    let entity_id = entity.id()?;
    want(&state, &caller, json!({"action": "remove", "entityId": entity_id, "season": q.season}), false).await
}
