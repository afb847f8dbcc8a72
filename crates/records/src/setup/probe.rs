//! The console's Test buttons: one real request to a service (TMDB's
//! configuration, an indexer's Torznab caps, a tracker's RSS feed, qBittorrent's version after
//! its login; for a notification target, a test message sent by its own
//! capability, so what arrives is what will arrive), or a real look at the roots (each a folder, writable, and
//! whether downloads can be hard-linked into the library), and what it
//! found, in words. A Test takes the values in the console's form, saved
//! or not (a secret left empty is the stored one), or else what is in
//! effect, and says which it used; what `capstan.toml` sets is the file's
//! either way. Nothing is changed but a test file, removed again.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::{ServiceEntry, ServiceKind, SetupError, SetupStore, kinds};
use crate::config::{Config, ServiceConfig};
use crate::runtime::Runtime;
use crate::runtime::host::Outbound;

/// What a test found, and with what.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProbeResult {
    pub ok: bool,
    pub found: String,
    /// The values the test used, in words: the form's (not saved), the
    /// saved ones, the environment's or `capstan.toml`'s.
    pub used: String,
}

fn found(ok: bool, found: impl Into<String>) -> ProbeResult {
    ProbeResult { ok, found: found.into(), used: String::new() }
}

impl ProbeResult {
    fn using(mut self, used: impl Into<String>) -> ProbeResult {
        self.used = used.into();
        self
    }
}

/// A service's values as typed into the console's form; an empty secret
/// is the stored one.
pub struct Form {
    pub entry: ServiceEntry,
    pub secret: Option<String>,
}

/// What a service's secret is called on its form.
pub(crate) fn secret_word(kind: ServiceKind) -> &'static str {
    match kind {
        ServiceKind::Tmdb => "key",
        ServiceKind::Torznab => "API key",
        ServiceKind::Rss => "feed URL",
        ServiceKind::Qbittorrent | ServiceKind::Transmission => "password",
        ServiceKind::Webhook | ServiceKind::Ntfy => "token",
        ServiceKind::Telegram => "bot token",
        ServiceKind::Discord => "webhook URL",
        ServiceKind::Jellyfin | ServiceKind::Emby => "API key",
        ServiceKind::Plex => "token",
    }
}

/// What a Test tries: the service, in words where its values came from,
/// and the form's entry when they are the form's.
struct Trial {
    service: ServiceConfig,
    used: String,
    form: Option<ServiceEntry>,
}

/// The service a Test of `name` makes its request to, and in words where
/// its values came from.
async fn trial(
    config: &Config,
    store: &SetupStore,
    name: &str,
    kind: ServiceKind,
    form: Option<Form>,
) -> Result<Trial, String> {
    let said = |e: SetupError| e.to_string();
    if let Some(file) = config.services.get(name) {
        let ignored = if form.is_some() { "; the form's values are not used" } else { "" };
        let used = format!("the setup in capstan.toml ({}){ignored}", file.base_url);
        return Ok(Trial { service: file.clone(), used, form: None });
    }
    let env = &config.tmdb_environment;
    let Some(Form { entry, secret }) = form else {
        let effective = store.effective(config).await.map_err(said)?;
        let service = effective
            .services
            .get(name)
            .cloned()
            .ok_or_else(|| format!("{name} is not set up: fill in its form and Test it, or Save it first"))?;
        let saved = store.row("service", name).await.map_err(said)?.is_some();
        let used = match (saved, env.credential) {
            (true, _) | (false, None) => format!("the saved setup ({})", service.base_url),
            (false, Some(variable)) => format!("the environment's {variable} ({})", service.base_url),
        };
        return Ok(Trial { service, used, form: None });
    };
    kinds::check_entry(kind, &entry)?;
    let word = secret_word(kind);
    let typed = secret.filter(|s| !s.trim().is_empty());
    let (entry, typed) = match typed {
        Some(typed) => {
            kinds::literal_secret(&typed)?;
            let (entry, stored) = kinds::with_typed_secret(kind, &entry, &typed)?;
            (entry, Some(stored))
        }
        None => (entry, None),
    };
    let stored = match &typed {
        Some(_) => None,
        None => match store.row("service", name).await.map_err(said)?.and_then(|(_, s)| s) {
            Some(stored) => Some(store.decrypt(name, &stored).map_err(said)?),
            None => None,
        },
    };
    let (service, with) = match (typed, stored) {
        (Some(typed), _) => (kinds::service_config(kind, &entry, &typed)?, format!("the {word} typed in the form")),
        (None, Some(stored)) => (kinds::service_config(kind, &entry, &stored)?, format!("the saved {word}")),
        (None, None) if kinds::secret_optional(kind) => (kinds::service_config(kind, &entry, "")?, "no token".into()),
        (None, None) => match (kind, kinds::tmdb_service(Some((&entry, None)), env), env.credential) {
            (ServiceKind::Tmdb, Some(service), Some(variable)) => (service?, format!("the key from {variable}")),
            _ => return Err(format!("{name} needs its {word}: type it in the form")),
        },
    };
    service.validate(name)?;
    let user =
        entry.username.as_deref().filter(|_| matches!(kind, ServiceKind::Qbittorrent | ServiceKind::Transmission));
    let user = user.map(|u| format!(" as {u}")).unwrap_or_default();
    let used = format!("the form's values, not saved ({}{user}, with {with})", service.base_url);
    Ok(Trial { service, used, form: Some(entry) })
}

/// The value of `attr` in the first `<tag ...>` of `xml`.
fn attribute<'a>(xml: &'a str, tag: &str, attr: &str) -> Option<&'a str> {
    let open = format!("<{tag}");
    let start = xml
        .match_indices(&open)
        .map(|(i, _)| i)
        .find(|i| xml[i + open.len()..].starts_with(|c: char| c.is_whitespace() || c == '/' || c == '>'))?;
    let element = &xml[start..start + xml[start..].find('>')?];
    let at = element.find(&format!("{attr}=\""))? + attr.len() + 2;
    element[at..].split('"').next()
}

fn torznab_caps(body: &str) -> ProbeResult {
    if body.contains("<error") {
        let said = attribute(body, "error", "description").unwrap_or("an error");
        return found(false, format!("the indexer refused: {said}"));
    }
    if !body.contains("<caps") {
        return found(false, "the answer is not Torznab caps (is the URL the indexer's Torznab feed?)");
    }
    let title = attribute(body, "server", "title").unwrap_or("a Torznab indexer");
    let searches: Vec<&str> = ["search", "tv-search", "movie-search"]
        .into_iter()
        .filter(|s| attribute(body, s, "available") == Some("yes"))
        .collect();
    let categories = body.matches("<category ").count();
    found(
        true,
        format!(
            "{title}: searches {}; {categories} categories",
            if searches.is_empty() { "none".into() } else { searches.join(", ") }
        ),
    )
}

/// What Jellyfin's or Emby's `/System/Info` says: its name and version.
fn media_server_info(kind: ServiceKind, body: &str) -> ProbeResult {
    let product = if kind == ServiceKind::Jellyfin { "Jellyfin" } else { "Emby" };
    let Ok(info) = serde_json::from_str::<serde_json::Value>(body) else {
        return found(false, format!("the answer is not {product}'s system info (is the URL the server's?)"));
    };
    let name = info["ServerName"].as_str().unwrap_or("a server");
    let version = info["Version"].as_str().unwrap_or("of an unknown version");
    found(true, format!("{product} {version}: {name} accepted the key"))
}

/// What Plex's library sections are: their names and folders.
fn plex_sections(body: &str) -> ProbeResult {
    if !body.contains("<MediaContainer") {
        return found(false, "the answer is not Plex's (is the URL the server's, port 32400?)");
    }
    let sections: Vec<String> = body
        .match_indices("<Directory")
        .map(|(at, _)| {
            let element = &body[at..];
            let title = attribute(element, "Directory", "title").unwrap_or("a library");
            match attribute(element, "Location", "path") {
                Some(path) => format!("{title} ({path})"),
                None => title.to_string(),
            }
        })
        .collect();
    if sections.is_empty() {
        return found(true, "Plex accepted the token, but has no libraries yet: add one for the library folder");
    }
    found(true, format!("Plex accepted the token; its libraries: {}", sections.join(", ")))
}

/// Tests service `name` with the form's values, or as it is in effect.
pub async fn service(runtime: &Runtime, store: &SetupStore, name: &str, form: Option<Form>) -> ProbeResult {
    let config = runtime.config().clone();
    let Some(kind) = kinds::kind_of(name) else { return found(false, format!("no service {name} can be set up here")) };
    let from_form = if form.is_some() { "the form's values" } else { "the saved setup" };
    let trial = match trial(&config, store, name, kind, form).await {
        Ok(trial) => trial,
        Err(e) => return found(false, e).using(from_form),
    };
    let used = trial.used.clone();
    if kind == ServiceKind::Rss {
        return tracker_feed(&config, store, name, trial).await.using(used);
    }
    match kinds::notifier_of(kind) {
        Some(capability) => test_message(runtime, store, name, capability, trial).await.using(used),
        None => request(name, kind, trial.service).await.using(used),
    }
}

/// Makes the test's one request to `service` and says what it found.
async fn request(name: &str, kind: ServiceKind, service: ServiceConfig) -> ProbeResult {
    let outbound = match Outbound::new(&BTreeMap::from([(name.to_string(), service)])) {
        Ok(o) => o,
        Err(e) => return found(false, e.to_string()),
    };
    let (path, query): (&str, Vec<(&str, &str)>) = match kind {
        ServiceKind::Tmdb => ("/configuration", vec![]),
        ServiceKind::Torznab => ("/api", vec![("t", "caps")]),
        ServiceKind::Qbittorrent => ("/api/v2/app/version", vec![]),
        ServiceKind::Jellyfin | ServiceKind::Emby => ("/System/Info", vec![]),
        ServiceKind::Transmission => ("/transmission/rpc", vec![]),
        ServiceKind::Plex => ("/library/sections", vec![]),
        // Notification targets are tried by sending (`test_message`).
        _ => return found(false, format!("{name} is tried by sending it a test message")),
    };
    let (status, body) = match outbound.host_request(name, "GET", path, &query).await {
        Ok(answer) => answer,
        Err(e) => return found(false, e),
    };
    let body = String::from_utf8_lossy(&body);
    match (kind, status) {
        (ServiceKind::Tmdb, 200) => {
            let images = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["images"]["secure_base_url"].as_str().map(str::to_string));
            found(
                true,
                format!(
                    "TMDB accepted the credential{}",
                    images.map(|i| format!("; posters come from {i}")).unwrap_or_default()
                ),
            )
        }
        (ServiceKind::Tmdb, 401) => found(false, "TMDB refused the credential: check the API key or read token"),
        (ServiceKind::Torznab, 200) => torznab_caps(&body),
        (ServiceKind::Qbittorrent, 200) => found(true, format!("qBittorrent {}", body.trim())),
        (ServiceKind::Qbittorrent, 403) => found(false, "qBittorrent refused the login: check the user and password"),
        // Transmission asks any caller it let in for its session id.
        (ServiceKind::Transmission, 409) if body.contains("X-Transmission-Session-Id") => {
            found(true, "Transmission's RPC answered and took the user and password")
        }
        (ServiceKind::Transmission, 401) => found(false, "Transmission refused the user and password: check them"),
        (ServiceKind::Transmission, 403) => {
            found(false, "Transmission refused this address: add it to rpc-whitelist in its settings.json")
        }
        (ServiceKind::Jellyfin | ServiceKind::Emby, 200) => media_server_info(kind, &body),
        (ServiceKind::Plex, 200) => plex_sections(&body),
        (ServiceKind::Jellyfin | ServiceKind::Emby | ServiceKind::Plex, 401 | 403) => {
            found(false, format!("{name} refused the {}: check it", secret_word(kind)))
        }
        (_, status) => {
            found(false, format!("{name} answered HTTP {status}: {}", body.chars().take(200).collect::<String>()))
        }
    }
}

/// Reads a tracker's feed as the feed sync will (the path from the form's
/// URL, else the setting in effect) and says how many releases it lists
/// and the newest.
async fn tracker_feed(config: &Config, store: &SetupStore, name: &str, trial: Trial) -> ProbeResult {
    let (capability, setting) = super::feed::FEED_PATH;
    let setting = setting.replacen("rss", &name.replace('-', "_"), 1);
    let from_file = config.capabilities.get(capability).and_then(|c| c.settings.get(&setting)).cloned();
    let typed = trial.form.as_ref().and_then(|e| e.feed_path.clone()).filter(|p| !p.trim().is_empty());
    let path = match (from_file, typed) {
        (Some(path), _) | (None, Some(path)) => path,
        (None, None) => match store.effective(config).await {
            Ok(effective) => {
                effective.settings.get(capability).and_then(|s| s.get(&setting)).cloned().unwrap_or_default()
            }
            Err(e) => return found(false, e.to_string()),
        },
    };
    let path = if path.is_empty() { "/".to_string() } else { path };
    let Ok(url) = reqwest::Url::parse(&format!("http://feed{path}")) else {
        return found(false, format!("the feed's path {path:?} is not a URL path"));
    };
    let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let path = url.path();
    let query: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let outbound = match Outbound::new(&BTreeMap::from([(name.to_string(), trial.service)])) {
        Ok(o) => o,
        Err(e) => return found(false, e.to_string()),
    };
    let (status, body) = match outbound.host_request(name, "GET", path, &query).await {
        Ok(answer) => answer,
        Err(e) => return found(false, e),
    };
    let body = String::from_utf8_lossy(&body);
    match status {
        200 if body.contains("<rss") => {
            let items = body.matches("<item").count();
            let newest = body
                .split("<item")
                .nth(1)
                .and_then(|item| item.split("<title>").nth(1))
                .and_then(|title| title.split("</title>").next())
                .map(|title| {
                    title
                        .trim()
                        .trim_start_matches("<![CDATA[")
                        .trim_end_matches("]]>")
                        .chars()
                        .take(120)
                        .collect::<String>()
                });
            match newest {
                Some(newest) => {
                    let releases = if items == 1 { "1 release".to_string() } else { format!("{items} releases") };
                    found(true, format!("the feed lists {releases}; the newest: {newest}"))
                }
                None => found(true, "the feed answered, listing no releases yet"),
            }
        }
        200 => found(false, "the answer is not an RSS feed (is the URL the tracker's feed link?)"),
        401 | 403 => {
            found(false, format!("the tracker refused the feed ({status}): check the passkey in the feed URL"))
        }
        status => {
            found(false, format!("{name} answered HTTP {status}: {}", body.chars().take(200).collect::<String>()))
        }
    }
}

/// Sends a test message to a notification target through its capability,
/// with the trial's service and the capability's settings (the form's
/// where it gives them and `capstan.toml` does not), and says whether it
/// arrived or why not.
async fn test_message(
    runtime: &Runtime,
    store: &SetupStore,
    name: &str,
    capability: &str,
    trial: Trial,
) -> ProbeResult {
    use crate::runtime::{Actor, CallOutcome, EffectClass, Grant};
    let config = runtime.config().clone();
    let mut settings = match store.effective(&config).await {
        Ok(effective) => effective.settings.get(capability).cloned().unwrap_or_default(),
        Err(e) => return found(false, e.to_string()),
    };
    if let Some(entry) = &trial.form {
        let from_file = config.capabilities.get(capability).map(|c| c.settings.clone()).unwrap_or_default();
        for (_, setting, value) in kinds::settings_of(kinds::kind_of(name).unwrap_or(ServiceKind::Webhook), entry) {
            if !from_file.contains_key(setting) {
                settings.insert(setting.to_string(), value);
            }
        }
    }
    let now = crate::store::now_ms();
    let message = serde_json::json!({
        "title": "Capstan: test",
        "message": format!("A test message from Capstan: {name} is connected."),
        "events": [{"kind": "test", "title": format!("{name} is connected"), "at": now}],
    });
    let services = BTreeMap::from([(name.to_string(), trial.service)]);
    let settings = BTreeMap::from([(capability.to_string(), settings)]);
    let grant = Grant::new(Actor::ConsoleAdmin, EffectClass::Execute);
    match runtime.call_trial(capability, &message.to_string(), grant, &services, settings).await {
        Err(e) => found(false, e),
        Ok(report) => match report.outcome {
            CallOutcome::Succeeded { .. } => {
                found(true, format!("a test message was sent to {name}: check that it arrived"))
            }
            CallOutcome::Failed { failure } => found(false, failure.message),
            CallOutcome::Pending { .. } => found(false, format!("{capability} did not say whether it was sent")),
            CallOutcome::Trapped { message, .. } => found(false, format!("{capability} failed: {message}")),
        },
    }
}

/// Whether `dir` is a folder this host can write in.
fn writable(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a folder this host can see", dir.display()));
    }
    let probe = dir.join(format!(".capstan-test-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&probe, b"capstan").map_err(|e| format!("{} is not writable: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Tests the roots: those in the form (a path of `form`, by root name),
/// each checked as saving it would check it, and the others as they are
/// in effect.
pub async fn roots(runtime: &Runtime, form: BTreeMap<String, String>) -> ProbeResult {
    let config = runtime.config().clone();
    let mut roots = runtime.root_paths();
    let mut used = Vec::new();
    for name in kinds::ROOT_NAMES {
        let typed = form.get(*name).map(|p| p.trim()).filter(|p| !p.is_empty());
        let saved = roots.get(*name).map(|p| p.display().to_string());
        match (typed, config.roots.get(*name)) {
            (Some(_), Some(file)) => used.push(format!("{name} from capstan.toml ({})", file.display())),
            (Some(path), None) if Some(path) == saved.as_deref() => used.push(format!("{name} as saved ({path})")),
            (Some(path), None) => match super::checked_root(&config, name, path) {
                Ok(dir) => {
                    used.push(format!("{name} from the form, not saved ({})", dir.display()));
                    roots.insert(name.to_string(), dir);
                }
                Err(e) => return found(false, e.to_string()).using(format!("{name} from the form ({path})")),
            },
            (None, _) => used.push(match saved {
                Some(path) => format!("{name} as saved ({path})"),
                None => format!("{name} unset"),
            }),
        }
    }
    let used = used.join("; ");
    let result = tokio::task::spawn_blocking(move || {
        let mut said = Vec::new();
        let mut ok = true;
        for name in kinds::ROOT_NAMES {
            match roots.get(*name) {
                None => {
                    ok = false;
                    said.push(format!("{name} is not set up"));
                }
                Some(dir) => match writable(dir) {
                    Ok(()) => said.push(format!("{name} ({}) is writable", dir.display())),
                    Err(e) => {
                        ok = false;
                        said.push(e);
                    }
                },
            }
        }
        if let (true, Some(downloads), Some(library)) = (ok, roots.get("downloads"), roots.get("library")) {
            let from = downloads.join(format!(".capstan-test-{}", uuid::Uuid::new_v4().simple()));
            let to = library.join(from.file_name().unwrap_or_default());
            let linked = std::fs::write(&from, b"capstan").and_then(|()| std::fs::hard_link(&from, &to));
            said.push(match linked {
                Ok(()) => "downloads can be hard-linked into the library (no space is used twice)".into(),
                Err(e) => format!("downloads cannot be hard-linked into the library ({e}); files will be copied"),
            });
            let _ = std::fs::remove_file(&to);
            let _ = std::fs::remove_file(&from);
        }
        found(ok, said.join("; "))
    })
    .await;
    result.unwrap_or_else(|e| found(false, format!("the test could not run: {e}"))).using(used)
}

#[cfg(test)]
mod tests {
    use super::torznab_caps;

    #[test]
    fn caps_are_read_and_an_indexer_error_is_said() {
        let caps = r#"<?xml version="1.0"?><caps><server title="Prowlarr (1)"/><searching><search available="yes"/><tv-search available="yes"/><movie-search available="no"/></searching><categories><category id="2000" name="Movies"/><category id="5000" name="TV"/></categories></caps>"#;
        let f = torznab_caps(caps);
        assert!(f.ok);
        assert_eq!(f.found, "Prowlarr (1): searches search, tv-search; 2 categories");
        let e = torznab_caps(r#"<error code="100" description="Invalid API Key"/>"#);
        assert!(!e.ok && e.found.contains("Invalid API Key"), "{}", e.found);
    }
}
