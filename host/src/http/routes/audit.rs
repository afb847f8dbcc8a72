//! `GET /api/v1/audit?after=&limit=`: the audit log, oldest first.

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::AppState;
use crate::http::auth::KeyAuth;
use crate::http::error::ApiError;

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
