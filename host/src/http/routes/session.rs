//! `POST /api/v1/session` (console login) and `DELETE /api/v1/session`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::openapi::ErrorBody;
use crate::http::session;
use crate::http::signin::SignInRefusal;
use crate::http::transport::Transport;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Login {
    #[schema(min_length = 1, max_length = 64)]
    name: String,
    #[schema(min_length = 1, max_length = 1024)]
    password: String,
}

/// A console session begun: whose it is, the token its changes carry, and
/// when it ends.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionStarted {
    admin: String,
    /// Sent back as the `X-CSRF-Token` header with every change.
    csrf_token: String,
    /// Milliseconds since the epoch.
    expires_at: i64,
}

/// Logs a console administrator in: sets the session cookie and returns
/// the CSRF token. A wrong name and a wrong password are answered alike;
/// repeated failures pause the client (and an account's failing clients)
/// for longer each time, answered 429 with `Retry-After`.
#[utoipa::path(post, path = "/api/v1/session", tag = "session", request_body = Login,
    responses((status = 200, description = "The session's administrator, CSRF token and expiry", body = SessionStarted),
              (status = 401, description = "Wrong name or password, or no administrator has a password yet (code no_administrator)", body = ErrorBody),
              (status = 403, description = "Sent from another site's page", body = ErrorBody),
              (status = 422, description = "Invalid body", body = ErrorBody),
              (status = 429, description = "Too many failures, or too many sign-ins at once: try after Retry-After seconds", body = ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    transport: Transport,
    ApiJson(body): ApiJson<Login>,
) -> Result<Response, ApiError> {
    let client = transport.client.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    let signed_in = state.signin.sign_in(&state.app, client, &body.name, &body.password).await;
    let s = match signed_in {
        Ok(s) => s,
        Err(SignInRefusal::Wrong) => {
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "wrong name or password"));
        }
        Err(SignInRefusal::NoAdministrator) => {
            let message = "no administrator has a password yet; on the server, run \
                           `capstan admin set-password --name admin` (it reads the password from standard input), \
                           then sign in";
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, "no_administrator", message));
        }
        Err(SignInRefusal::Paused(wait)) => {
            let seconds = wait.as_secs_f64().ceil() as u64;
            let message = format!("too many failed sign-ins; try again in {} s", seconds.max(1));
            return Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_attempts", message).retry_after(seconds));
        }
        Err(SignInRefusal::Busy) => {
            let message = "too many sign-ins at once; try again in a moment";
            return Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "busy", message).retry_after(1));
        }
        Err(SignInRefusal::Sql(e)) => return Err(e.into()),
    };
    let cookie = session::cookie(&s, transport.https);
    let body = SessionStarted { admin: s.admin, csrf_token: s.csrf_token, expires_at: s.expires_at };
    Ok(([(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

/// Ends the console session.
#[utoipa::path(delete, path = "/api/v1/session", tag = "session", security(("consoleSession" = [])),
    responses((status = 204, description = "Logged out"), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn logout(State(state): State<AppState>, transport: Transport, caller: Caller) -> Result<Response, ApiError> {
    let Caller::Console(s) = caller else {
        // An API key has no session to end: as without one.
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "no_session", "only a console session can log out"));
    };
    session::logout(&state.services().db, &s.id).await?;
    Ok(([(header::SET_COOKIE, session::expired_cookie(transport.https))], StatusCode::NO_CONTENT).into_response())
}
