//! The services a newcomer sets up, by kind, and the outbound service each
//! becomes: TMDB (an API key as a query parameter, or a read token as a
//! bearer header), a Torznab indexer (its key as `apikey`), qBittorrent
//! (its WebUI's form login; `torrents/info` is a read), a tracker's RSS
//! feed (its passkey as a query credential, [`super::feed`]), the notification
//! targets: a webhook and ntfy (an optional bearer token), Telegram (the
//! bot token in the URL's path) and Discord (the webhook's `<id>/<token>`
//! in the path), and the media servers: Jellyfin (its `MediaBrowser
//! Token="…"` scheme), Emby and Plex (their token headers). What the
//! targets and servers need beside a URL and a secret is [`super::told`]'s.
//! The operation tables and credential rules are the same as for services
//! in `capstan.toml`.

use serde::{Deserialize, Serialize};

use crate::config::{Auth, OperationRule, SecretRef, ServiceConfig, TmdbEnvironment};

pub use super::told::{
    MEDIA_SERVER_REFRESH, NOTIFY_KINDS, check_entry, discord_webhook, notifier_of, secret_optional, settings_of,
    told_by, with_typed_secret,
};

/// The names a service set up in the console may have, and their kind.
pub const SERVICE_NAMES: &[(&str, ServiceKind)] = &[
    ("tmdb", ServiceKind::Tmdb),
    ("torznab", ServiceKind::Torznab),
    ("torznab-2", ServiceKind::Torznab),
    ("torznab-3", ServiceKind::Torznab),
    ("rss", ServiceKind::Rss),
    ("qbittorrent", ServiceKind::Qbittorrent),
    ("transmission", ServiceKind::Transmission),
    ("webhook", ServiceKind::Webhook),
    ("ntfy", ServiceKind::Ntfy),
    ("telegram", ServiceKind::Telegram),
    ("discord", ServiceKind::Discord),
    ("jellyfin", ServiceKind::Jellyfin),
    ("emby", ServiceKind::Emby),
    ("plex", ServiceKind::Plex),
];

/// The roots a newcomer sets up.
pub const ROOT_NAMES: &[&str] = &["downloads", "library"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    Tmdb,
    Torznab,
    Rss,
    Qbittorrent,
    Transmission,
    Webhook,
    Ntfy,
    Telegram,
    Discord,
    Jellyfin,
    Emby,
    Plex,
}

/// The kind a service name has, if the console may set it up.
pub fn kind_of(name: &str) -> Option<ServiceKind> {
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
    /// For ntfy: the topic (`notify.ntfy`'s setting `topic`).
    #[serde(default)]
    pub topic: Option<String>,
    /// For Telegram: the chat (`notify.telegram`'s setting `chat_id`).
    #[serde(default)]
    pub chat_id: Option<String>,
    /// For a media server: the library folder as it sees it, when not the
    /// path Capstan sees (`mediaserver.refresh`'s `<server>_library`).
    #[serde(default)]
    pub library_path: Option<String>,
    /// For a tracker's RSS feed: its path and query after the address,
    /// without the key (`release.search`'s `rss_path`).
    #[serde(default)]
    pub feed_path: Option<String>,
}

impl ServiceEntry {
    /// An entry with only a base URL.
    pub fn at(base_url: impl Into<String>) -> ServiceEntry {
        ServiceEntry {
            base_url: base_url.into(),
            username: None,
            token_kind: None,
            topic: None,
            chat_id: None,
            library_path: None,
            feed_path: None,
        }
    }
}

/// The default base URL of a kind.
pub(crate) fn default_base(kind: ServiceKind) -> &'static str {
    match kind {
        ServiceKind::Tmdb => crate::config::TMDB_DEFAULT_BASE,
        ServiceKind::Torznab => "",
        // Where a feed is comes from the URL pasted whole.
        ServiceKind::Rss => "https://tracker.example",
        ServiceKind::Qbittorrent => "http://127.0.0.1:8080",
        ServiceKind::Transmission => "http://127.0.0.1:9091",
        ServiceKind::Webhook => "",
        ServiceKind::Ntfy => "https://ntfy.sh",
        ServiceKind::Telegram => "https://api.telegram.org",
        ServiceKind::Discord => "https://discord.com/api/webhooks",
        ServiceKind::Jellyfin => "http://127.0.0.1:8096",
        ServiceKind::Emby => "http://127.0.0.1:8096/emby",
        ServiceKind::Plex => "http://127.0.0.1:32400",
    }
}

/// How a secret the host reads from elsewhere starts: `env:NAME`,
/// `file:/path`.
const REFERENCES: [&str; 2] = ["env:", "file:"];

/// Refuses a secret typed in the console (or a settings change) that the
/// host would read as a reference rather than as itself: `env:NAME` and
/// `file:/path` would send that variable's or file's contents to the
/// service's URL, which whoever set it up chose.
pub fn literal_secret(secret: &str) -> Result<(), String> {
    match REFERENCES.into_iter().find(|p| secret.trim_start().starts_with(p)) {
        Some(prefix) => Err(format!(
            "a key starting with {prefix} would be read from elsewhere, not sent as typed; give the key itself"
        )),
        None => Ok(()),
    }
}

/// What [`literal_secret`] refuses, as a pattern: a document's secret
/// carries it as `not`.
pub fn reference_pattern() -> String {
    format!("^[{}]*({})", crate::text::WHITE_SPACE, REFERENCES.join("|"))
}

/// The outbound service an entry becomes with its secret.
pub(crate) fn service_config(kind: ServiceKind, entry: &ServiceEntry, secret: &str) -> Result<ServiceConfig, String> {
    let secret = SecretRef(secret.to_string());
    let (auth, operations) = match kind {
        ServiceKind::Tmdb => match entry.token_kind.as_deref().unwrap_or("apiKey") {
            "apiKey" => (Auth::Query { name: "api_key".into(), value: secret }, Vec::new()),
            "readToken" => (
                Auth::Header {
                    name: "Authorization".into(),
                    value: secret,
                    prefix: "Bearer ".into(),
                    suffix: String::new(),
                },
                Vec::new(),
            ),
            other => return Err(format!("tokenKind {other:?} is not apiKey or readToken")),
        },
        ServiceKind::Torznab => (Auth::Query { name: "apikey".into(), value: secret }, Vec::new()),
        ServiceKind::Rss => match super::feed::key_of(&secret.0) {
            Some((name, value)) => (Auth::Query { name, value: SecretRef(value) }, Vec::new()),
            None => (Auth::None, Vec::new()),
        },
        ServiceKind::Qbittorrent => {
            let username = entry.username.clone().filter(|u| !u.trim().is_empty()).ok_or("username is needed")?;
            let auth = Auth::FormLogin {
                path: "/api/v2/auth/login".into(),
                username,
                password: secret,
                username_field: "username".into(),
                password_field: "password".into(),
            };
            let info = OperationRule::new("POST", "/api/v2/torrents/info", "read");
            (auth, vec![info])
        }
        // Every RPC call is a POST to one path: reads are told by their
        // method.
        ServiceKind::Transmission => {
            let mut reads = OperationRule::new("POST", "/transmission/rpc*", "read");
            reads.rpc_methods = vec!["torrent-get".into(), "session-get".into()];
            let user = entry.username.clone().filter(|u| !u.trim().is_empty());
            let auth = match user {
                Some(username) => Auth::Basic { username, password: secret },
                None if secret.0.is_empty() => Auth::None,
                None => return Err("a password needs its user: give Transmission's RPC user too".into()),
            };
            (auth, vec![reads])
        }
        ServiceKind::Webhook | ServiceKind::Ntfy if secret.0.is_empty() => (Auth::None, Vec::new()),
        ServiceKind::Webhook | ServiceKind::Ntfy => (
            Auth::Header {
                name: "Authorization".into(),
                value: secret,
                prefix: "Bearer ".into(),
                suffix: String::new(),
            },
            Vec::new(),
        ),
        ServiceKind::Telegram => {
            let token = secret.0.trim();
            if !crate::config::path_safe(token, false) {
                return Err("that is not a Telegram bot token: BotFather gives one like 123456789:AAH…".into());
            }
            (Auth::Path { value: SecretRef(token.to_string()), prefix: "bot".into() }, Vec::new())
        }
        ServiceKind::Discord => {
            let (_, hook) = discord_webhook(&secret.0, &entry.base_url)?;
            (Auth::Path { value: SecretRef(hook), prefix: String::new() }, Vec::new())
        }
        // Jellyfin 12 takes only its own Authorization scheme; Emby its
        // token header; Plex its token header.
        ServiceKind::Jellyfin => {
            let auth = Auth::Header {
                name: "Authorization".into(),
                value: secret,
                prefix: "MediaBrowser Token=\"".into(),
                suffix: "\"".into(),
            };
            (auth, Vec::new())
        }
        ServiceKind::Emby => (
            Auth::Header { name: "X-Emby-Token".into(), value: secret, prefix: String::new(), suffix: String::new() },
            Vec::new(),
        ),
        ServiceKind::Plex => (
            Auth::Header { name: "X-Plex-Token".into(), value: secret, prefix: String::new(), suffix: String::new() },
            Vec::new(),
        ),
    };
    // A webhook's path is its capability's setting: the service is the
    // URL's origin.
    let base_url = match kind {
        ServiceKind::Webhook => match reqwest::Url::parse(entry.base_url.trim()) {
            Ok(url) if url.has_host() => url.origin().ascii_serialization(),
            _ => return Err(format!("{:?} is not a webhook URL: give it whole, https://…", entry.base_url)),
        },
        ServiceKind::Rss => super::feed::origin(&entry.base_url)?,
        _ => entry.base_url.trim().trim_end_matches('/').to_string(),
    };
    Ok(ServiceConfig { base_url, auth, operations, timeout_ms: 15_000, response_cap_bytes: 8 << 20 })
}

/// TMDB as it takes effect when `capstan.toml` does not set it: the
/// console's entry (its base URL, its key or else the environment's), or
/// with none the environment's credential and base URL. `None` when there
/// is no credential at all.
pub fn tmdb_service(
    entry: Option<(&ServiceEntry, Option<&str>)>,
    env: &TmdbEnvironment,
) -> Option<Result<ServiceConfig, String>> {
    match entry {
        Some((entry, Some(secret))) => Some(service_config(ServiceKind::Tmdb, entry, secret)),
        Some((entry, None)) => {
            let from_env = ServiceEntry::at(entry.base_url.clone());
            Some(Ok(with_auth(&from_env, env.auth()?)))
        }
        None => {
            let from_env = ServiceEntry::at(env.base());
            Some(Ok(with_auth(&from_env, env.auth()?)))
        }
    }
}

fn with_auth(entry: &ServiceEntry, auth: Auth) -> ServiceConfig {
    ServiceConfig {
        base_url: entry.base_url.trim().trim_end_matches('/').to_string(),
        auth,
        operations: Vec::new(),
        timeout_ms: 15_000,
        response_cap_bytes: 8 << 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> TmdbEnvironment {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TmdbEnvironment::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn auth_of(service: &ServiceConfig) -> (String, String) {
        match &service.auth {
            Auth::Query { name, value } => (format!("query {name}"), value.0.clone()),
            Auth::Header { name, value, prefix, .. } => (format!("header {name} {prefix}"), value.0.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_environment_sets_up_tmdb_when_nothing_else_does() {
        assert_eq!(tmdb_service(None, &env(&[])).map(|s| s.is_ok()), None, "no credential, no TMDB");
        assert_eq!(tmdb_service(None, &env(&[("TMDB_BASE_URL", "http://proxy/3")])).map(|s| s.is_ok()), None);
        let key = tmdb_service(None, &env(&[("TMDB_API_KEY", "k")])).unwrap().unwrap();
        assert_eq!(
            (key.base_url.as_str(), auth_of(&key)),
            ("https://api.themoviedb.org/3", ("query api_key".into(), "env:TMDB_API_KEY".into()))
        );
        let both = env(&[("TMDB_API_KEY", "k"), ("TMDB_ACCESS_TOKEN", "t"), ("TMDB_BASE_URL", "http://proxy/3/")]);
        let token = tmdb_service(None, &both).unwrap().unwrap();
        assert_eq!(token.base_url, "http://proxy/3");
        assert_eq!(auth_of(&token), ("header Authorization Bearer ".into(), "env:TMDB_ACCESS_TOKEN".into()));
        assert_eq!(env(&[("TMDB_API_KEY", "  ")]).credential, None, "a blank variable is unset");
    }

    #[test]
    fn a_typed_secret_is_never_a_reference() {
        let pattern = regex::Regex::new(&reference_pattern()).unwrap();
        for literal in ["0123abcd", "en:v", "x env:HOME", "ENV:HOME", "fil:e", ""] {
            assert!(literal_secret(literal).is_ok() && !pattern.is_match(literal), "{literal}");
        }
        for reference in ["env:CAPSTAN_MASTER_KEY", "file:/etc/passwd", " env:HOME", "\u{3000}\tfile:x"] {
            assert!(literal_secret(reference).is_err() && pattern.is_match(reference), "{reference}");
        }
    }

    #[test]
    fn what_is_configured_wins_over_the_environment() {
        let both = env(&[("TMDB_API_KEY", "k"), ("TMDB_BASE_URL", "http://proxy/3")]);
        let entry = ServiceEntry::at("http://mirror/3");
        let stored = tmdb_service(Some((&entry, Some("stored"))), &both).unwrap().unwrap();
        assert_eq!((stored.base_url.as_str(), auth_of(&stored).1.as_str()), ("http://mirror/3", "stored"));
        // A base URL without a key of its own takes the environment's key.
        let keyless = tmdb_service(Some((&entry, None)), &both).unwrap().unwrap();
        assert_eq!((keyless.base_url.as_str(), auth_of(&keyless).1.as_str()), ("http://mirror/3", "env:TMDB_API_KEY"));
        assert!(tmdb_service(Some((&entry, None)), &env(&[])).is_none());
    }
}
