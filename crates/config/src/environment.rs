//! What Capstan takes from the environment it starts with beyond its own
//! folders (the command line reads `CAPSTAN_*`): TMDB's credential and
//! base URL, used where nothing else sets TMDB up. The command line reads
//! them once, at start; the secret itself is not kept here — a service
//! refers to its variable (`env:NAME`), read when a request is sent.

use super::{Auth, SecretRef};

/// TMDB's v3 API key, sent as the `api_key` query parameter.
pub const TMDB_API_KEY_ENV: &str = "TMDB_API_KEY";
/// TMDB's v4 read access token, sent as a bearer token.
pub const TMDB_ACCESS_TOKEN_ENV: &str = "TMDB_ACCESS_TOKEN";
/// TMDB's API base URL.
pub const TMDB_BASE_URL_ENV: &str = "TMDB_BASE_URL";
/// TMDB's own API base URL.
pub const TMDB_DEFAULT_BASE: &str = "https://api.themoviedb.org/3";

/// What the environment says about TMDB: which variable holds the
/// credential (the access token when both are set: a header stays out of
/// URLs and the logs of proxies) and the base URL. Names, not secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TmdbEnvironment {
    pub credential: Option<&'static str>,
    pub base_url: Option<String>,
}

impl TmdbEnvironment {
    /// This process's environment.
    pub fn read() -> TmdbEnvironment {
        TmdbEnvironment::from_lookup(|name| std::env::var(name).ok())
    }

    /// The environment `lookup` answers for; a blank value is unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> TmdbEnvironment {
        let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let credential = [TMDB_ACCESS_TOKEN_ENV, TMDB_API_KEY_ENV].into_iter().find(|name| set(name).is_some());
        let base_url = set(TMDB_BASE_URL_ENV).map(|v| v.trim().trim_end_matches('/').to_string());
        TmdbEnvironment { credential, base_url }
    }

    /// The base URL TMDB takes when nothing configures one: the
    /// environment's, or TMDB's own.
    pub fn base(&self) -> String {
        self.base_url.clone().unwrap_or_else(|| TMDB_DEFAULT_BASE.to_string())
    }

    /// How the credential is sent, if there is one.
    pub fn auth(&self) -> Option<Auth> {
        let name = self.credential?;
        let value = SecretRef(format!("env:{name}"));
        Some(if name == TMDB_ACCESS_TOKEN_ENV {
            Auth::Header { name: "Authorization".into(), value, prefix: "Bearer ".into(), suffix: String::new() }
        } else {
            Auth::Query { name: "api_key".into(), value }
        })
    }
}
