//! `GET /api/v1/calendar?from=&to=`: the wanted episodes that air (or
//! aired) in a span of days, each with where it stands, and the releases
//! handed to the download client in it. Days are `YYYY-MM-DD` (UTC); the
//! span defaults to a week ago through two weeks ahead and covers at most
//! 92 days.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use super::library::domain_error;
use crate::domain::Calendar;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::extract::ApiQuery;
use crate::http::openapi::ErrorBody;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CalendarQuery {
    from: Option<String>,
    to: Option<String>,
}

/// What a span of days holds.
#[utoipa::path(get, path = "/api/v1/calendar", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("from" = Option<String>, Query, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description = "First day, YYYY-MM-DD (default a week ago)"),
           ("to" = Option<String>, Query, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description = "Last day, YYYY-MM-DD (default three weeks after from); at most 92 days in all")),
    responses((status = 200, description = "The episodes airing and the releases grabbed in the span", body = Calendar),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 422, description = "A day that is not one, from after to, or a span over 92 days", body = ErrorBody)))]
pub async fn calendar(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<CalendarQuery>,
) -> Result<Json<Calendar>, ApiError> {
    let calendar = state.services().domain.calendar(q.from.as_deref(), q.to.as_deref()).await.map_err(domain_error)?;
    Ok(Json(calendar))
}
