//! What each operation asks of its caller, checked before anything else
//! about the request: the caller is authenticated and its authority
//! compared with the operation's here, in one middleware, so a caller
//! without it is answered 401 or 403 whatever its body, path or query
//! say, and never learns from a 404 or a 422 what lies behind. The table
//! [`OPERATIONS`] is the one statement of it; the OpenAPI document carries
//! it as `x-capstan-authority` on each operation. Finer checks that depend
//! on what is asked for (an invoke's capability label, an agent run's
//! mode) stay in their handlers and still come before the input's own
//! checks.
//!
//! Changes sent with a console session's cookie are also refused when a
//! browser says they come from another site's page (`Origin`,
//! `Sec-Fetch-Site`): the CSRF token already stands in the way, and this
//! makes a second wall that does not depend on the token staying secret.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;
use crate::runtime::EffectClass;

/// What an operation asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: anyone may call it (it may still check more itself, as
    /// `/metrics` does for callers from elsewhere).
    Nobody,
    /// An API key with a scope reaching this class, or a console session.
    Scope(EffectClass),
    /// A console administrator's session; API keys are refused.
    Console,
}

impl Needs {
    /// How the OpenAPI document names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Needs::Nobody => "none",
            Needs::Scope(class) => class.as_str(),
            Needs::Console => "console",
        }
    }

    /// 403 unless `caller` has this authority.
    fn allows(self, caller: &Caller) -> Result<(), ApiError> {
        match (self, caller) {
            (Needs::Nobody, _) | (_, Caller::Console(_)) => Ok(()),
            (Needs::Console, Caller::Key(_)) => {
                Err(ApiError::forbidden("this is done from a console session, not with an API key"))
            }
            (Needs::Scope(class), Caller::Key(key)) if key.ceiling().is_some_and(|c| c >= class) => Ok(()),
            (Needs::Scope(class), Caller::Key(_)) => {
                Err(ApiError::forbidden(format!("this needs the {class} scope; this key's scopes do not reach it")))
            }
        }
    }
}

use EffectClass::{Execute, Propose, Read};
use Needs::{Console, Nobody, Scope};

/// Every operation of the API, by method and route template.
pub(crate) const OPERATIONS: &[(&str, &str, Needs)] = &[
    ("GET", "/api/v1/health", Nobody),
    // Open from this machine; from elsewhere the handler asks for a caller.
    ("GET", "/metrics", Nobody),
    ("GET", "/api/v1/openapi.json", Nobody),
    ("POST", "/api/v1/session", Nobody),
    ("DELETE", "/api/v1/session", Console),
    ("GET", "/api/v1/capabilities", Scope(Read)),
    // The capability's own label is checked by the handler, before its input.
    ("POST", "/api/v1/capabilities/{id}/invoke", Scope(Read)),
    ("POST", "/api/v1/capabilities/{id}/accept", Console),
    ("PUT", "/api/v1/plugins/{file}", Console),
    ("DELETE", "/api/v1/plugins/{file}", Console),
    ("GET", "/api/v1/skills", Scope(Read)),
    ("GET", "/api/v1/skills/{name}", Scope(Read)),
    ("PUT", "/api/v1/skills/{name}", Console),
    ("GET", "/api/v1/audit", Scope(Read)),
    ("GET", "/api/v1/audit/verify", Scope(Read)),
    ("GET", "/api/v1/events", Scope(Read)),
    ("GET", "/api/v1/automation-grants", Console),
    ("POST", "/api/v1/automation-grants", Console),
    ("PATCH", "/api/v1/automation-grants/{id}", Console),
    ("GET", "/api/v1/approvals", Scope(Read)),
    ("POST", "/api/v1/approvals", Scope(Read)),
    ("GET", "/api/v1/approvals/{id}", Scope(Read)),
    ("PATCH", "/api/v1/approvals/{id}", Console),
    ("GET", "/api/v1/decisions", Scope(Read)),
    ("GET", "/api/v1/decisions/{id}", Scope(Read)),
    ("PATCH", "/api/v1/decisions/{id}", Scope(Execute)),
    ("GET", "/api/v1/settings", Scope(Read)),
    ("PATCH", "/api/v1/settings", Console),
    ("GET", "/api/v1/library", Scope(Read)),
    ("GET", "/api/v1/library/titles/{entityId}/episodes", Scope(Read)),
    ("GET", "/api/v1/calendar", Scope(Read)),
    ("POST", "/api/v1/library/titles", Scope(Execute)),
    ("PATCH", "/api/v1/library/titles/{entityId}", Scope(Execute)),
    ("DELETE", "/api/v1/library/titles/{entityId}", Scope(Execute)),
    ("PUT", "/api/v1/library/titles/{entityId}/seasons/{season}/episodes", Scope(Execute)),
    ("POST", "/api/v1/library/titles/{entityId}/search", Scope(Execute)),
    ("GET", "/api/v1/policies", Scope(Read)),
    ("PUT", "/api/v1/policies/{name}", Console),
    ("GET", "/api/v1/blocklist", Scope(Read)),
    ("POST", "/api/v1/blocklist", Console),
    ("DELETE", "/api/v1/blocklist/{releaseId}", Console),
    ("GET", "/api/v1/notifications", Scope(Read)),
    ("GET", "/api/v1/setup", Scope(Read)),
    ("PUT", "/api/v1/setup/services/{name}", Console),
    ("DELETE", "/api/v1/setup/services/{name}", Console),
    ("POST", "/api/v1/setup/services/{name}/test", Console),
    ("PUT", "/api/v1/setup/roots/{name}", Console),
    ("DELETE", "/api/v1/setup/roots/{name}", Console),
    ("POST", "/api/v1/setup/roots/test", Console),
    ("PUT", "/api/v1/setup/mcp/{name}", Console),
    ("DELETE", "/api/v1/setup/mcp/{name}", Console),
    ("POST", "/api/v1/setup/mcp/{name}/test", Console),
    ("PUT", "/api/v1/setup/library", Console),
    ("GET", "/api/v1/acquisition-plans", Scope(Read)),
    ("POST", "/api/v1/acquisition-plans", Scope(Execute)),
    ("GET", "/api/v1/artifacts", Scope(Read)),
    ("GET", "/api/v1/artifacts/{id}", Scope(Read)),
    ("GET", "/api/v1/tasks", Scope(Read)),
    ("GET", "/api/v1/tasks/{id}", Scope(Read)),
    ("POST", "/api/v1/tasks/{id}/cancel", Scope(Execute)),
    ("POST", "/api/v1/tasks/{id}/retry", Scope(Execute)),
    // An execute-mode run needs the execute scope, checked by the handler.
    ("POST", "/api/v1/agent/runs", Scope(Propose)),
    ("GET", "/api/v1/agent/runs", Scope(Read)),
    ("GET", "/api/v1/agent/runs/{id}", Scope(Read)),
    ("DELETE", "/api/v1/agent/runs/{id}", Scope(Execute)),
    // A message to an execute-mode run needs the execute scope (handler).
    ("POST", "/api/v1/agent/runs/{id}/messages", Scope(Propose)),
    ("POST", "/api/v1/agent/runs/{id}/abort", Scope(Propose)),
];

/// What the operation `method route` asks; `None` for a route that is
/// not an API operation (the console's files).
pub fn needs(method: &Method, route: &str) -> Option<Needs> {
    let method = if method == Method::HEAD { "GET" } else { method.as_str() };
    OPERATIONS.iter().find(|(m, r, _)| *m == method && *r == route).map(|(_, _, needs)| *needs)
}

/// The caller a request was authenticated as, for the handler's
/// extractors (so they do not authenticate it again).
#[derive(Clone)]
pub(crate) struct Authenticated(pub Caller);

/// Authenticates the caller and checks the operation's authority before
/// the request goes any further.
pub async fn check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let Some(route) = route else { return next.run(request).await };
    let needs = match needs(request.method(), &route) {
        Some(needs) => needs,
        // A method the route does not take: the router answers 405.
        None if OPERATIONS.iter().any(|(_, r, _)| *r == route) => return next.run(request).await,
        None if route.starts_with("/api/") || route == "/metrics" => {
            // Fail closed: an API route missing from the table serves nobody.
            tracing::error!(%route, method = %request.method(), "an API operation has no authority in the table");
            return ApiError::forbidden("this operation's authority is not declared").into_response();
        }
        None => return next.run(request).await,
    };
    if let Err(refusal) = cross_site(request.method(), request.headers(), &state) {
        return refusal.into_response();
    }
    if needs == Needs::Nobody {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let caller =
        match <Caller as axum::extract::FromRequestParts<AppState>>::from_request_parts(&mut parts, &state).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal.into_response(),
        };
    if let Err(refusal) = needs.allows(&caller) {
        return refusal.into_response();
    }
    parts.extensions.insert(Authenticated(caller));
    next.run(Request::from_parts(parts, body)).await
}

/// 403 for a change a browser says came from another site's page.
/// Requests with an API key are not a browser's ambient authority and
/// are let through; so are requests without `Origin` or
/// `Sec-Fetch-Site`, which browsers send with every cross-site change.
fn cross_site(method: &Method, headers: &HeaderMap, state: &AppState) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Bearer "));
    if bearer {
        return Ok(());
    }
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase);
    if let Some(site) = fetch_site.as_deref()
        && !matches!(site, "same-origin" | "none")
    {
        return Err(ApiError::forbidden(format!(
            "this change was sent from another site's page (Sec-Fetch-Site: {site}); make it from Capstan's own console"
        )));
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("").trim().trim_end_matches('/').to_ascii_lowercase();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase);
    let own = host.is_some_and(|host| origin == format!("http://{host}") || origin == format!("https://{host}"));
    if own || state.public_origins.contains(&origin) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "this change was sent from a page of {origin:?}, not from Capstan's own console; \
         if Capstan is served under that address, list it in public_origins"
    )))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Each operation of the served document, as `(METHOD, route)`.
    fn documented() -> Vec<(String, String, serde_json::Value)> {
        let doc = super::super::document();
        let mut found = Vec::new();
        for (route, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                found.push((method.to_ascii_uppercase(), route.clone(), operation.clone()));
            }
        }
        found
    }

    #[test]
    fn every_documented_operation_declares_its_authority_and_nothing_else_does() {
        let documented = documented();
        let in_doc: BTreeSet<(String, String)> = documented.iter().map(|(m, r, _)| (m.clone(), r.clone())).collect();
        let mut in_table = BTreeSet::new();
        for (method, route, _) in OPERATIONS {
            assert!(in_table.insert((method.to_string(), route.to_string())), "{method} {route} is listed twice");
        }
        // The document itself is the one route served outside it.
        in_table.remove(&("GET".to_string(), "/api/v1/openapi.json".to_string()));
        assert_eq!(in_doc, in_table, "the table and the document list different operations");
        for (method, route, operation) in documented {
            let needs = needs(&Method::from_bytes(method.as_bytes()).unwrap(), &route).unwrap();
            assert_eq!(operation["x-capstan-authority"], needs.as_str(), "{method} {route}");
            // The document's security says the same: a console-only
            // operation names only the session, an open one nothing.
            let schemes: BTreeSet<String> = operation["security"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|r| r.as_object().unwrap().keys().cloned())
                .collect();
            let open = operation["security"].as_array().is_none_or(|s| s.iter().any(|r| r == &serde_json::json!({})));
            match needs {
                Needs::Nobody => assert!(open, "{method} {route} is open to anyone but its document asks for a caller"),
                Needs::Console => {
                    assert_eq!(schemes, BTreeSet::from(["consoleSession".to_string()]), "{method} {route}")
                }
                Needs::Scope(_) => assert_eq!(
                    schemes,
                    BTreeSet::from(["apiKey".to_string(), "consoleSession".to_string()]),
                    "{method} {route}"
                ),
            }
            if needs != Needs::Nobody {
                assert!(!open, "{method} {route} needs a caller but its document says it is open");
            }
        }
    }

    #[test]
    fn operation_ids_are_unique() {
        let mut seen = BTreeSet::new();
        for (method, route, operation) in documented() {
            let id = operation["operationId"].as_str().unwrap().to_string();
            assert!(seen.insert(id.clone()), "{method} {route} shares the operationId {id}");
        }
    }
}
