//! `GET /api/v1/audit?after=&limit=` (or `?latest=`): the audit log,
//! oldest first; `GET /api/v1/audit/verify`: the hash chain checked.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use crate::audit::{AuditEntry, ChainCheck};
use crate::http::AppState;
use crate::http::auth::KeyAuth;
use crate::http::error::ApiError;
use crate::http::extract::{ApiQuery, in_range};
use crate::http::openapi::ErrorBody;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditPage {
    after: Option<i64>,
    limit: Option<i64>,
    /// The newest this many events (of those after `after`) instead of a page.
    latest: Option<i64>,
}

/// A stretch of the audit log, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct AuditEvents {
    events: Vec<AuditEntry>,
    /// The last event's seq, the `after` to go on from; null when there
    /// were none.
    next: Option<i64>,
}

/// The audit log, oldest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", security(("apiKey" = []), ("consoleSession" = [])),
    params(("after" = Option<i64>, Query, minimum = 0, description = "Sequence number to start after (default 0)"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "At most this many events (default 100)"),
           ("latest" = Option<i64>, Query, minimum = 1, maximum = 1000,
               description = "Instead of a page: the newest this many events, of those after `after`")),
    responses((status = 200, description = "Events and the sequence number to continue from", body = AuditEvents), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _: KeyAuth,
    ApiQuery(page): ApiQuery<AuditPage>,
) -> Result<Json<AuditEvents>, ApiError> {
    let after = in_range("after", page.after, 0, 0, i64::MAX)?;
    let limit = in_range("limit", page.limit, 100, 1, 1000)?;
    let events = match page.latest {
        Some(latest) => {
            let n = in_range("latest", Some(latest), 0, 1, 1000)?;
            // The newest n overall, cut at `after`, are the newest n after it.
            let mut newest = state.app.audit().latest(n).await?;
            newest.retain(|e| e.seq > after);
            newest
        }
        None => state.app.audit().list(after, limit).await?,
    };
    let next = events.last().map(|e| e.seq);
    Ok(Json(AuditEvents { events, next }))
}

/// Checks the hash chain from where the last check reached: the events
/// appended since, after making sure the last one checked is unchanged.
/// A full walk from the first event is `capstan audit verify`.
#[utoipa::path(get, path = "/api/v1/audit/verify", tag = "audit", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "{\"Intact\": {events}} or {\"Broken\": {seq, reason}}, with checked (events read by this check) and since (the seq it went on from)", body = ChainCheck), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn verify(State(state): State<AppState>, _: KeyAuth) -> Result<Json<ChainCheck>, ApiError> {
    Ok(Json(state.app.audit().verify_new().await?))
}
