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
use crate::http::session;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    name: String,
    password: String,
}

pub async fn login(State(state): State<AppState>, ApiJson(body): ApiJson<Login>) -> Result<Response, ApiError> {
    let Some(s) = session::login(state.caps.db(), &body.name, &body.password).await? else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "wrong name or password"));
    };
    let body = Json(json!({ "admin": s.admin, "csrfToken": s.csrf_token, "expiresAt": s.expires_at }));
    Ok(([(header::SET_COOKIE, session::cookie(&s))], body).into_response())
}

pub async fn logout(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let Caller::Console(s) = caller else {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "no_session", "only a console session can log out"));
    };
    session::logout(state.caps.db(), &s.id).await?;
    Ok(([(header::SET_COOKIE, session::expired_cookie())], StatusCode::NO_CONTENT).into_response())
}
