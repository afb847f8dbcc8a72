//! The services a newcomer sets up, by kind, and the outbound service each
//! becomes: TMDB (an API key as a query parameter, or a read token as a
//! bearer header), a Torznab indexer (its key as `apikey`), qBittorrent
//! (its WebUI's form login; `torrents/info` is a read). The operation
//! tables and credential rules are the same as for services in
//! `capstan.toml`.

use serde::{Deserialize, Serialize};

use crate::config::{Auth, OperationRule, SecretRef, ServiceConfig};

/// The names a service set up in the console may have, and their kind.
pub const SERVICE_NAMES: &[(&str, Kind)] = &[
    ("tmdb", Kind::Tmdb),
    ("torznab", Kind::Torznab),
    ("torznab-2", Kind::Torznab),
    ("torznab-3", Kind::Torznab),
    ("qbittorrent", Kind::Qbittorrent),
];

/// The roots a newcomer sets up.
pub const ROOT_NAMES: &[&str] = &["downloads", "library"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Tmdb,
    Torznab,
    Qbittorrent,
}

/// The kind a service name has, if the console may set it up.
pub fn kind_of(name: &str) -> Option<Kind> {
    SERVICE_NAMES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// What is stored for a service (its secret apart, encrypted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceEntry {
    pub base_url: String,
    /// qBittorrent's WebUI user.
    #[serde(default)]
    pub username: Option<String>,
    /// For TMDB: `apiKey` (v3 key, a query parameter) or `readToken` (v4
    /// read access token, a bearer header). Default `apiKey`.
    #[serde(default)]
    pub token_kind: Option<String>,
}

/// The default base URL of a kind.
pub fn default_base(kind: Kind) -> &'static str {
    match kind {
        Kind::Tmdb => "https://api.themoviedb.org/3",
        Kind::Torznab => "",
        Kind::Qbittorrent => "http://127.0.0.1:8080",
    }
}

/// The outbound service an entry becomes with its secret.
pub fn service_config(kind: Kind, entry: &ServiceEntry, secret: &str) -> Result<ServiceConfig, String> {
    let secret = SecretRef(secret.to_string());
    let (auth, operations) = match kind {
        Kind::Tmdb => match entry.token_kind.as_deref().unwrap_or("apiKey") {
            "apiKey" => (Auth::Query { name: "api_key".into(), value: secret }, Vec::new()),
            "readToken" => {
                (Auth::Header { name: "Authorization".into(), value: secret, prefix: "Bearer ".into() }, Vec::new())
            }
            other => return Err(format!("tokenKind {other:?} is not apiKey or readToken")),
        },
        Kind::Torznab => (Auth::Query { name: "apikey".into(), value: secret }, Vec::new()),
        Kind::Qbittorrent => {
            let username = entry.username.clone().filter(|u| !u.trim().is_empty()).ok_or("username is needed")?;
            let auth = Auth::FormLogin {
                path: "/api/v2/auth/login".into(),
                username,
                password: secret,
                username_field: "username".into(),
                password_field: "password".into(),
            };
            let info =
                OperationRule { method: "POST".into(), path: "/api/v2/torrents/info".into(), class: "read".into() };
            (auth, vec![info])
        }
    };
    Ok(ServiceConfig {
        base_url: entry.base_url.trim().trim_end_matches('/').to_string(),
        auth,
        operations,
        timeout_ms: 15_000,
        response_cap_bytes: 8 << 20,
    })
}
