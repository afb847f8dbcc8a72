//! `GET /api/v1/audit?after=&limit=` (or `?latest=`): the audit log,
//! oldest first; `GET /api/v1/audit/verify`: the hash chain checked.

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::AppState;
use crate::http::auth::KeyAuth;
use crate::http::error::ApiError;
use crate::http::openapi::ErrorBody;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    #[serde(default)]
    after: i64,
    #[serde(default = "default_limit")]
    limit: i64,
    /// The newest this many events instead of a page after `after`.
    #[serde(default)]
    latest: Option<i64>,
}

fn default_limit() -> i64 {
    100
}

/// The audit log, oldest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", security(("apiKey" = []), ("consoleSession" = [])),
    params(("after" = Option<i64>, Query, description = "Sequence number to start after"),
           ("limit" = Option<i64>, Query, description = "At most this many events, 1 to 1000"),
           ("latest" = Option<i64>, Query, description = "The newest this many events (1 to 1000), instead of after/limit")),
    responses((status = 200, description = "Events and the sequence number to continue from", body = serde_json::Value), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    KeyAuth(_): KeyAuth,
    Query(page): Query<Page>,
) -> Result<Json<Value>, ApiError> {
    if !(1..=1000).contains(&page.limit) || page.after < 0 {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "limit must be 1 to 1000 and after at least 0",
        ));
    }
    let events = match page.latest {
        Some(n) if !(1..=1000).contains(&n) || page.after > 0 => {
            return Err(ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_query",
                "latest must be 1 to 1000, and not given with after",
            ));
        }
        Some(n) => state.caps.audit().latest(n).await?,
        None => state.caps.audit().list(page.after, page.limit).await?,
    };
    let next = events.last().map(|e| e.seq);
    Ok(Json(json!({ "events": events, "next": next })))
}

/// Walks the whole hash chain and reports the first broken link.
#[utoipa::path(get, path = "/api/v1/audit/verify", tag = "audit", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "{\"Intact\": {events}} or {\"Broken\": {seq, reason}}", body = serde_json::Value), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn verify(State(state): State<AppState>, KeyAuth(_): KeyAuth) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!(state.caps.audit().verify().await?)))
}
