//! Outbound service definitions: base URL, how credentials are injected,
//! which operations count as reads, timeouts and response caps. Secrets are
//! references (`env:NAME`, `file:/path`) or literals, resolved only when a
//! request is sent and never handed to a component.

use serde::Deserialize;

/// Where a secret comes from.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct SecretRef(pub String);

impl SecretRef {
    /// Resolves the secret now. `env:NAME` reads an environment variable,
    /// `file:/path` a file (trailing newline trimmed), anything else is the
    /// value itself.
    pub fn resolve(&self) -> Result<String, String> {
        if let Some(name) = self.0.strip_prefix("env:") {
            std::env::var(name).map_err(|_| format!("environment variable {name} is not set"))
        } else if let Some(path) = self.0.strip_prefix("file:") {
            std::fs::read_to_string(path)
                .map(|s| s.trim_end_matches(['\n', '\r']).to_string())
                .map_err(|e| format!("cannot read secret file {path}: {e}"))
        } else {
            Ok(self.0.clone())
        }
    }
}

impl std::fmt::Display for SecretRef {
    /// Never prints the value, only where it comes from.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.starts_with("env:") || self.0.starts_with("file:") {
            write!(f, "{}", self.0)
        } else {
            write!(f, "<literal secret>")
        }
    }
}

/// How the host authenticates to a service.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Auth {
    #[default]
    None,
    /// A request header, e.g. `Authorization: Bearer <secret>` with
    /// `prefix = "Bearer "`, `X-Api-Key: <secret>`, or Jellyfin's
    /// `Authorization: MediaBrowser Token="<secret>"` with a `suffix`.
    Header {
        name: String,
        value: SecretRef,
        #[serde(default)]
        prefix: String,
        #[serde(default)]
        suffix: String,
    },
    /// A query parameter, e.g. `api_key=<secret>`.
    Query { name: String, value: SecretRef },
    /// A secret that is part of the URL's path, as a Telegram bot's token
    /// (`/bot<token>/sendMessage`) or a Discord webhook's (`/<id>/<token>`):
    /// the URL is the base URL, then `prefix` and the secret as path
    /// segments, then the component's path (`/` alone adds nothing). The
    /// component's path is what the operation table classes; it never sees
    /// or names the secret.
    Path {
        value: SecretRef,
        #[serde(default)]
        prefix: String,
    },
    /// HTTP basic auth.
    Basic { username: String, password: SecretRef },
    /// A form POST that sets a session cookie (qBittorrent's WebUI login).
    /// The host logs in before the first request and again when the
    /// service answers 401 or 403.
    FormLogin {
        path: String,
        username: String,
        password: SecretRef,
        #[serde(default = "default_username_field")]
        username_field: String,
        #[serde(default = "default_password_field")]
        password_field: String,
    },
}

fn default_username_field() -> String {
    "username".into()
}

fn default_password_field() -> String {
    "password".into()
}

/// Whether `text` may be path segments as they are, with nothing to
/// encode and nothing a server could reshape: ASCII letters, digits and
/// `-._~:`, segments separated by single `/` (when `slashes`), none of
/// them empty, `.` or `..`.
pub fn path_safe(text: &str, slashes: bool) -> bool {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._~:".contains(c);
    let segments: Vec<&str> = if slashes { text.split('/').collect() } else { vec![text] };
    segments.iter().all(|s| !s.is_empty() && *s != "." && *s != ".." && s.chars().all(safe))
}

/// How a path's letter case is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    None,
    Lower,
    Upper,
}

/// One row of a service's operation table. Rules are tried in order; the
/// first whose method and path (and, for a JSON-RPC endpoint, RPC method)
/// match decides the class. Without a match, GET and HEAD are reads and
/// everything else is a write. Paths are matched decoded, as the service
/// routes them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationRule {
    /// HTTP method, or `*` for any.
    pub method: String,
    /// Exact path, or a prefix ending in `*`.
    pub path: String,
    /// `read` or `write`.
    pub class: String,
    /// For a JSON-RPC endpoint, where every call is a POST to one path
    /// (Transmission's `/transmission/rpc`): the rule matches only a body
    /// that is one JSON object with exactly one `method` member, a string
    /// among these. Empty: any body.
    #[serde(default)]
    pub rpc_methods: Vec<String>,
}

/// The RPC method a request body names: `Some` only for a body that is
/// strictly one JSON object with exactly one `method` member, a string.
/// Anything a server could read another way (two `method` members, a
/// non-string, trailing text, not JSON at all) names none.
pub fn rpc_method(body: Option<&[u8]>) -> Option<String> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct Methods;
    impl<'de> Visitor<'de> for Methods {
        type Value = Vec<serde_json::Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = Vec::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "method" {
                    found.push(map.next_value::<serde_json::Value>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(body?);
    let found = de.deserialize_map(Methods).ok()?;
    de.end().ok()?;
    match found.as_slice() {
        [serde_json::Value::String(name)] => Some(name.clone()),
        _ => None,
    }
}

impl OperationRule {
    /// A rule for any body.
    pub fn new(method: &str, path: &str, class: &str) -> OperationRule {
        OperationRule { method: method.into(), path: path.into(), class: class.into(), rpc_methods: Vec::new() }
    }

    /// Whether the rule matches a request whose body names `rpc` (see
    /// [`rpc_method`]); folded, paths compare ignoring letter case
    /// as case-insensitive servers route them (both ways: `ı` and `ſ` meet
    /// `I` and `S` only in upper case).
    pub fn matches(&self, method: &str, path: &str, fold: Fold, rpc: Option<&str>) -> bool {
        if !self.rpc_methods.is_empty() && !rpc.is_some_and(|m| self.rpc_methods.iter().any(|r| r == m)) {
            return false;
        }
        let method_ok = self.method == "*" || self.method.eq_ignore_ascii_case(method);
        let (rule, path) = match fold {
            Fold::None => (self.path.clone(), path.to_string()),
            Fold::Lower => (self.path.to_lowercase(), path.to_lowercase()),
            Fold::Upper => (self.path.to_uppercase(), path.to_uppercase()),
        };
        let path_ok = match rule.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => rule == path,
        };
        method_ok && path_ok
    }
}

/// One outbound service under `[services.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// Base URL; component paths are appended to it.
    pub base_url: String,
    #[serde(default)]
    pub auth: Auth,
    #[serde(default)]
    pub operations: Vec<OperationRule>,
    /// Per-request timeout, milliseconds. Default 15000.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Largest response body accepted, bytes. Default 8 MiB.
    #[serde(default = "default_response_cap")]
    pub response_cap_bytes: u64,
}

fn default_timeout() -> u64 {
    15_000
}

fn default_response_cap() -> u64 {
    8 << 20
}

impl ServiceConfig {
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let url = reqwest::Url::parse(&self.base_url)
            .map_err(|e| format!("services.{name}.base_url {:?}: {e}", self.base_url))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!("services.{name}.base_url must be http or https"));
        }
        if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "services.{name}.base_url must not carry a query, a fragment or credentials (use `auth`)"
            ));
        }
        for rule in &self.operations {
            if rule.class != "read" && rule.class != "write" {
                return Err(format!("services.{name}.operations: class must be read or write, not {:?}", rule.class));
            }
            if !rule.path.starts_with('/') {
                return Err(format!("services.{name}.operations: path {:?} must start with /", rule.path));
            }
            if rule.rpc_methods.iter().any(|m| m.is_empty() || m.len() > 64) {
                return Err(format!("services.{name}.operations: rpc_methods must be 1 to 64 characters each"));
            }
        }
        if self.timeout_ms == 0 {
            return Err(format!("services.{name}.timeout_ms must be positive"));
        }
        if let Auth::FormLogin { path, .. } = &self.auth
            && !path.starts_with('/')
        {
            return Err(format!("services.{name}.auth.path must start with /"));
        }
        if let Auth::Path { prefix, .. } = &self.auth
            && !prefix.is_empty()
            && !path_safe(prefix, false)
        {
            return Err(format!(
                "services.{name}.auth.prefix must be letters, digits, -, ., _, ~ or : (it starts a path segment)"
            ));
        }
        Ok(())
    }

    /// Whether `method path` (the decoded path) with `body` is a read.
    /// Servers route one request several ways — HEAD as GET, a trailing
    /// slash as none, paths ignoring case — so it is a read only when every
    /// way the service could route it is one.
    pub fn is_read(&self, method: &str, path: &str, body: Option<&[u8]>) -> bool {
        let rpc = rpc_method(body);
        let trimmed = path.strip_suffix('/').filter(|p| !p.is_empty()).unwrap_or(path);
        let slashed = format!("{trimmed}/");
        let methods: &[&str] = if method.eq_ignore_ascii_case("HEAD") { &["HEAD", "GET"] } else { &[method] };
        methods.iter().all(|m| {
            [path, trimmed, slashed.as_str()].iter().all(|p| {
                [Fold::None, Fold::Lower, Fold::Upper].iter().all(|fold| self.class_of(m, p, *fold, rpc.as_deref()))
            })
        })
    }

    fn class_of(&self, method: &str, path: &str, fold: Fold, rpc: Option<&str>) -> bool {
        match self.operations.iter().find(|r| r.matches(method, path, fold, rpc)) {
            Some(rule) => rule.class == "read",
            None => method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OperationRule, ServiceConfig};

    fn service(rules: &[(&str, &str, &str)]) -> ServiceConfig {
        let mut s: ServiceConfig = toml::from_str("base_url = \"http://svc\"").unwrap();
        s.operations = rules.iter().map(|(m, p, c)| OperationRule::new(m, p, c)).collect();
        s
    }

    #[test]
    fn every_way_a_server_routes_a_path_must_be_a_read() {
        let s = service(&[("GET", "/api/delete", "write"), ("POST", "/api/search*", "read")]);
        assert!(s.is_read("GET", "/api/info", None));
        assert!(!s.is_read("GET", "/api/delete", None));
        assert!(!s.is_read("GET", "/api/delete/", None), "trailing slash");
        assert!(!s.is_read("GET", "/API/Delete", None), "case-insensitive server");
        let t = service(&[("GET", "/api/discard", "write"), ("GET", "/admin/*", "write")]);
        assert!(!t.is_read("GET", "/api/d\u{131}scard", None), "dotless i meets I in upper case");
        assert!(!t.is_read("GET", "/admin", None), "a server routes /admin as /admin/");
        assert!(!s.is_read("HEAD", "/api/delete", None), "HEAD routed as GET");
        assert!(s.is_read("POST", "/api/search/movies", None));
        assert!(!s.is_read("POST", "/api/add", None));
        assert!(!s.is_read("DELETE", "/api/search", None));
    }

    #[test]
    fn a_json_rpc_call_is_a_read_only_when_its_one_method_is_listed() {
        let mut s = service(&[]);
        let mut rule = OperationRule::new("POST", "/transmission/rpc*", "read");
        rule.rpc_methods = vec!["torrent-get".into(), "session-get".into()];
        s.operations.push(rule);
        let read = |body: &str| s.is_read("POST", "/transmission/rpc", Some(body.as_bytes()));
        assert!(read(r#"{"method": "torrent-get", "arguments": {"fields": ["hashString"]}}"#));
        assert!(read(r#"{"arguments": {"method": "torrent-remove"}, "method": "session-get"}"#), "only its own member");
        for write in [
            r#"{"method": "torrent-remove", "arguments": {"ids": [1]}}"#,
            r#"{"method": "torrent-get", "method": "torrent-remove"}"#,
            r#"{"method": "torrent-remove", "method": "torrent-get"}"#,
            r#"{"method": ["torrent-get"]}"#,
            r#"{"method": "torrent-get"} {"method": "torrent-remove"}"#,
            r#"[{"method": "torrent-get"}]"#,
            r#"{"method": "Torrent-Get"}"#,
            "method=torrent-get",
            "",
        ] {
            assert!(!read(write), "{write}");
        }
        assert!(!s.is_read("POST", "/transmission/rpc", None));
    }
}
