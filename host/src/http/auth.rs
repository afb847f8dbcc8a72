//! Who is calling: an API key presented as `Authorization: Bearer cap_...`.
//! (Console sessions with cookies and CSRF protection join here later.)

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;
use super::keys::{self, ApiKey};

/// An authenticated API-key caller.
pub struct KeyAuth(pub ApiKey);

impl FromRequestParts<AppState> for KeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let Some(token) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
            return Err(ApiError::unauthorized());
        };
        match keys::authenticate(state.caps.db(), token.trim()).await? {
            Some(key) => Ok(KeyAuth(key)),
            None => Err(ApiError::unauthorized()),
        }
    }
}
