//! The blocklist over HTTP: `GET /api/v1/blocklist` lists the releases no
//! sweep picks again (newest first, with why and who), `POST` blocks one
//! by its source release id and `DELETE /api/v1/blocklist/{releaseId}`
//! lets it be picked again. Changing it is a console administrator's, and
//! each change is audited. Giving up a running download for another
//! release is `download.replace` (a decision's "Find another release"),
//! which blocks its release too.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::openapi::path::{Parameter, ParameterIn};

use super::library::domain_error;
use crate::domain::BlockedRelease;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;

/// The blocked releases.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Blocklist {
    releases: Vec<BlockedRelease>,
}

/// A release to block, and why.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BlockRelease {
    /// The source release (as the library, a plan or a decision names it).
    #[schema(min_length = 1, max_length = 128)]
    source_release_id: String,
    /// Why, kept with the entry.
    #[schema(min_length = 1, max_length = 500)]
    reason: String,
}

/// The `{releaseId}` of a blocked release.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReleasePath {
    release_id: String,
}

impl utoipa::IntoParams for ReleasePath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut schema = crate::http::schema::not_blank();
        schema.max_length = Some(128);
        vec![crate::http::schema::parameter("releaseId", ParameterIn::Path, "Source release id", schema)]
    }
}

/// The releases no sweep picks again, newest first.
#[utoipa::path(get, path = "/api/v1/blocklist", tag = "library", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "The blocklist, newest first (at most 500)", body = Blocklist),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, _caller: Caller) -> Result<Json<Blocklist>, ApiError> {
    let releases = state.services().domain.blocklist(crate::domain::MAX_BLOCKLISTED).await.map_err(domain_error)?;
    Ok(Json(Blocklist { releases }))
}

/// Blocks a release: no search or feed picks it again, for any title.
#[utoipa::path(post, path = "/api/v1/blocklist", tag = "library", security(("consoleSession" = [])),
    request_body = BlockRelease,
    responses((status = 201, description = "Blocked (or blocked already: the entry as it was)", body = BlockedRelease),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "The blocklist is changed from a console session", body = ErrorBody),
              (status = 404, description = "No such release", body = ErrorBody),
              (status = 422, description = "No reason, or one longer than 500 characters", body = ErrorBody)))]
pub async fn block(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<BlockRelease>,
) -> Result<(StatusCode, Json<BlockedRelease>), ApiError> {
    let blocked = state
        .services()
        .domain
        .block_release(body.source_release_id.trim(), &body.reason, &caller.principal())
        .await
        .map_err(domain_error)?;
    let detail = serde_json::json!({"title": blocked.title, "reason": blocked.reason}).to_string();
    super::audit_change(&state, &caller, "release.block", &blocked.release_id, "succeeded", Some(detail)).await?;
    Ok((StatusCode::CREATED, Json(blocked)))
}

/// Lets a blocked release be picked again.
#[utoipa::path(delete, path = "/api/v1/blocklist/{releaseId}", tag = "library", security(("consoleSession" = [])),
    params(ReleasePath),
    responses((status = 204, description = "Unblocked"),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "The blocklist is changed from a console session", body = ErrorBody),
              (status = 404, description = "The release is not blocked", body = ErrorBody)))]
pub async fn unblock(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<ReleasePath>,
) -> Result<StatusCode, ApiError> {
    let id = path.release_id.trim();
    state.services().domain.unblock_release(id).await.map_err(domain_error)?;
    super::audit_change(&state, &caller, "release.unblock", id, "succeeded", None).await?;
    Ok(StatusCode::NO_CONTENT)
}
