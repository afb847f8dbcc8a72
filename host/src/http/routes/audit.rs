//! `GET /api/v1/audit?after=&limit=`: the audit log, oldest first.

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
}

fn default_limit() -> i64 {
    100
}

/// The audit log, oldest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", security(("apiKey" = []), ("consoleSession" = [])),
    params(("after" = Option<i64>, Query, description = "Sequence number to start after"),
           ("limit" = Option<i64>, Query, description = "At most this many events, 1 to 1000")),
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
    let events = state.caps.audit().list(page.after, page.limit).await?;
    let next = events.last().map(|e| e.seq);
    Ok(Json(json!({ "events": events, "next": next })))
}
