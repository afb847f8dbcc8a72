//! `POST /api/v1/session` (console login) and `DELETE /api/v1/session`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::openapi::ErrorBody;
use crate::http::session;
use crate::http::transport::Transport;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    name: String,
    password: String,
}

/// Logs a console administrator in: sets the session cookie and returns the CSRF token.
#[utoipa::path(post, path = "/api/v1/session", tag = "session", request_body = Login,
    responses((status = 200, description = "The session's administrator, CSRF token and expiry", body = serde_json::Value), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    transport: Transport,
    ApiJson(body): ApiJson<Login>,
) -> Result<Response, ApiError> {
    let Some(s) = session::login(state.caps().db(), &body.name, &body.password).await? else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "wrong name or password"));
    };
    let body = Json(json!({ "admin": s.admin, "csrfToken": s.csrf_token, "expiresAt": s.expires_at }));
    Ok(([(header::SET_COOKIE, session::cookie(&s, transport.https))], body).into_response())
}

/// Ends the console session.
#[utoipa::path(delete, path = "/api/v1/session", tag = "session", security(("consoleSession" = [])),
    responses((status = 204, description = "Logged out"), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn logout(State(state): State<AppState>, transport: Transport, caller: Caller) -> Result<Response, ApiError> {
    let Caller::Console(s) = caller else {
        // An API key has no session to end: as without one.
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "no_session", "only a console session can log out"));
    };
    session::logout(state.caps().db(), &s.id).await?;
    Ok(([(header::SET_COOKIE, session::expired_cookie(transport.https))], StatusCode::NO_CONTENT).into_response())
}
