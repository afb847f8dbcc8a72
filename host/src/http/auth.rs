//! Who is calling: an API key presented as `Authorization: Bearer cap_...`,
//! or a console administrator's session cookie. Cookie-authenticated writes
//! must carry the session's CSRF token in `X-CSRF-Token`, so another site
//! cannot make the browser act for the administrator.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, header};

use super::AppState;
use super::error::ApiError;
use super::keys::{self, ApiKey};
use super::session::{self, COOKIE, CSRF_HEADER, ConsoleSession};

/// Proof that the caller is authenticated, by key or by console session
/// (read endpoints take a session as a key with every scope), for handlers
/// that need no more than that.
pub(crate) struct KeyAuth;

/// Any authenticated caller.
#[derive(Clone)]
pub(crate) enum Caller {
    Key(ApiKey),
    Console(ConsoleSession),
}

fn bearer(parts: &Parts) -> Option<&str> {
    parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|h| h.strip_prefix("Bearer "))
}

/// The session id from the cookie header, if present.
pub(crate) fn session_cookie(parts: &Parts) -> Option<String> {
    let cookies = parts.headers.get(header::COOKIE)?.to_str().ok()?;
    cookies.split(';').find_map(|c| c.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_string))
}

impl FromRequestParts<AppState> for KeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Caller::from_request_parts(parts, state).await?;
        Ok(KeyAuth)
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // Already authenticated by the authority check in front of the handler.
        if let Some(super::authority::Authenticated(caller)) = parts.extensions.get() {
            return Ok(caller.clone());
        }
        if let Some(token) = bearer(parts) {
            return match keys::authenticate(&state.services().db, &state.keys, token.trim()).await? {
                Some(key) => Ok(Caller::Key(key)),
                None => Err(ApiError::unauthorized()),
            };
        }
        let Some(id) = session_cookie(parts) else { return Err(ApiError::unauthorized()) };
        let Some(s) = session::find(&state.services().db, &id).await? else { return Err(ApiError::unauthorized()) };
        let writes = !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if writes {
            let presented = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
            if presented != Some(s.csrf_token.as_str()) {
                return Err(ApiError::forbidden("this write needs the session's CSRF token in X-CSRF-Token"));
            }
        }
        Ok(Caller::Console(s))
    }
}

impl Caller {
    /// `admin:<name>` or `key:<id>`.
    pub fn principal(&self) -> String {
        match self {
            Caller::Console(s) => crate::principal::admin(&s.admin),
            Caller::Key(k) => crate::principal::key(&k.id),
        }
    }

    /// The origin of calls made for this caller within one request, after
    /// checking that a key's scopes reach `label` (403 otherwise). A console
    /// administrator's own call is human authorisation.
    pub fn origin(
        &self,
        label: crate::runtime::EffectClass,
        what: &str,
        request_id: String,
    ) -> Result<crate::pipeline::Origin, ApiError> {
        use crate::runtime::{Actor, EffectClass, Mode};
        let (actor, ceiling) = match self {
            Caller::Key(key) => {
                let ceiling = key.ceiling().filter(|c| *c >= label).ok_or_else(|| {
                    ApiError::forbidden(format!("{what} needs the {label} scope; this key's scopes do not reach it"))
                })?;
                (Actor::ApiKey, ceiling)
            }
            Caller::Console(_) => (Actor::ConsoleAdmin, EffectClass::Execute),
        };
        Ok(crate::pipeline::Origin {
            actor,
            principal: self.principal(),
            run_id: None,
            task_id: None,
            tool_call_id: None,
            request_id,
            mode: Mode::Execute,
            ceiling,
        })
    }
}
