//! Who may reach `/mcp`, decided before the protocol sees the request:
//!
//! - `Host` must be loopback, a host of `public_origins`, or one the
//!   operator lists under `[mcp] allowed_hosts` — so a web page that
//!   rebinds its own name to this machine's address is turned away (403);
//! - `Origin`, when a browser sends one, must be loopback, a
//!   `public_origins` entry or one of `[mcp] allowed_origins` (403);
//! - the caller presents an API key as `Authorization: Bearer cap_...`:
//!   the same keys and scopes as the HTTP API. Without one the answer is
//!   401 with `WWW-Authenticate: Bearer`; a console session's cookie is
//!   not taken here (a browser would send it on another site's behalf).
//!
//! Every refusal is a JSON-RPC error without an id, as the transport's
//! rules allow; the key that passed rides in the request's extensions
//! ([`McpKey`]) to the tool handlers. A key's sessions past its cap end
//! oldest first ([`super::sessions`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::super::AppState;
use super::super::keys::{self, ApiKey};
use super::sessions::SessionCount;

/// The header a session of the older revisions is named by.
const SESSION_HEADER: &str = "mcp-session-id";

/// The API key a request to `/mcp` was authenticated with.
#[derive(Clone, Debug)]
pub(crate) struct McpKey(pub ApiKey);

/// Who besides loopback may reach the endpoint, lower case.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    origins: Vec<String>,
    hosts: Vec<String>,
}

impl Reach {
    /// From the configuration: `[mcp]` and the console's `public_origins`.
    pub fn new(mcp: &crate::config::McpConfig, public_origins: &[String]) -> Reach {
        let origins: Vec<String> =
            mcp.allowed_origins.iter().map(|o| o.0.clone()).chain(public_origins.iter().cloned()).collect();
        let from_origins = origins.iter().filter_map(|o| o.split_once("://").map(|(_, host)| host.to_string()));
        let hosts = mcp.allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).chain(from_origins).collect();
        Reach { origins, hosts }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        loopback(&host) || self.hosts.contains(&host)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        let host = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        host.is_some_and(loopback) || self.origins.contains(&origin)
    }
}

/// Whether `host` (`name[:port]`) names this machine's loopback.
fn loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }),
    };
    name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A JSON-RPC error without an id, with `status`.
fn refused(status: StatusCode, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("(not text)"))
}

/// The gate in front of the MCP service.
pub async fn check(
    State((state, reach, sessions)): State<(AppState, Reach, Arc<SessionCount>)>,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = header_text(headers, header::HOST).or(request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if reach.host_allowed(host) => {}
        host => {
            let named = host.unwrap_or("none");
            let message = format!(
                "this MCP endpoint does not answer under Host {named:?}; an operator adds it to [mcp] allowed_hosts"
            );
            return refused(StatusCode::FORBIDDEN, -32600, message);
        }
    }
    if let Some(origin) = header_text(headers, header::ORIGIN)
        && !reach.origin_allowed(origin)
    {
        let message = format!(
            "pages from {origin} may not call this MCP endpoint; an operator adds the origin to [mcp] allowed_origins"
        );
        return refused(StatusCode::FORBIDDEN, -32600, message);
    }
    let token = header_text(headers, header::AUTHORIZATION).and_then(|h| h.strip_prefix("Bearer ")).map(str::trim);
    let key = match token {
        Some(token) => keys::authenticate(&state.services().db, &state.keys, token).await,
        None => Ok(None),
    };
    let key = match key {
        Ok(Some(key)) => key,
        Ok(None) => {
            let said = if token.is_some() { "this API key is not valid" } else { "an API key is required" };
            let message =
                format!("{said}: send Authorization: Bearer cap_... (a key made with `capstan admin create-key`)");
            let mut answer = refused(StatusCode::UNAUTHORIZED, -32001, message);
            let challenge = if token.is_some() {
                r#"Bearer realm="capstan", error="invalid_token""#
            } else {
                r#"Bearer realm="capstan""#
            };
            answer.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            return answer;
        }
        Err(e) => return super::super::error::ApiError::from(e).into_response(),
    };
    let key_id = key.id.clone();
    let resumes = request.headers().contains_key(SESSION_HEADER);
    request.extensions_mut().insert(McpKey(key));
    let response = next.run(request).await;
    // A response that names a session the request did not opened one.
    if let Some(session) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
        && !resumes
    {
        sessions.admit(session, &key_id).await;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_reached_and_other_hosts_only_when_listed() {
        for host in ["127.0.0.1:4380", "localhost", "LOCALHOST:80", "[::1]:4380", "127.9.9.9"] {
            assert!(Reach::default().host_allowed(host), "{host}");
        }
        for host in ["evil.example", "192.168.1.2:4380", "localhost.evil.example", "127.0.0.1.nip.io"] {
            assert!(!Reach::default().host_allowed(host), "{host}");
        }
        let config = crate::config::McpConfig {
            servers: Default::default(),
            allowed_origins: vec!["https://agent.example.org".parse().unwrap()],
            allowed_hosts: vec!["Capstan.LAN:4380".into()],
        };
        let reach = Reach::new(&config, &["https://capstan.example.org".into()]);
        assert!(reach.host_allowed("capstan.lan:4380") && reach.host_allowed("capstan.example.org"));
        assert!(!reach.host_allowed("capstan.lan:9999"));
        assert!(reach.origin_allowed("https://agent.example.org") && reach.origin_allowed("http://localhost:3000"));
        assert!(!reach.origin_allowed("https://evil.example") && !reach.origin_allowed("null"));
    }
}
