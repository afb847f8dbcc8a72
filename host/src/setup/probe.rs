//! The console's Test buttons: one real request to a service as it is set
//! up now (TMDB's configuration, an indexer's Torznab caps, qBittorrent's
//! version after its login), or a real look at the roots (each a folder,
//! writable, and whether downloads can be hard-linked into the library),
//! and what it found, in words. Nothing is changed but a test file, removed
//! again.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::SetupStore;
use super::{Kind, kinds};
use crate::runtime::Runtime;
use crate::runtime::host::Outbound;

/// What a test found.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Found {
    pub ok: bool,
    pub found: String,
}

fn found(ok: bool, found: impl Into<String>) -> Found {
    Found { ok, found: found.into() }
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

fn torznab_caps(body: &str) -> Found {
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

/// Tests service `name` as it is in effect.
pub async fn service(runtime: &Runtime, store: &SetupStore, name: &str) -> Found {
    let config = runtime.config().clone();
    let effective = match store.effective(&config).await {
        Ok(e) => e,
        Err(e) => return found(false, e.to_string()),
    };
    let Some(service) = effective.services.get(name) else {
        return found(false, format!("{name} is not set up"));
    };
    let outbound = match Outbound::new(&BTreeMap::from([(name.to_string(), service.clone())])) {
        Ok(o) => o,
        Err(e) => return found(false, e.to_string()),
    };
    let kind = kinds::kind_of(name).unwrap_or(Kind::Tmdb);
    let (path, query): (&str, Vec<(&str, &str)>) = match kind {
        Kind::Tmdb => ("/configuration", vec![]),
        Kind::Torznab => ("/api", vec![("t", "caps")]),
        Kind::Qbittorrent => ("/api/v2/app/version", vec![]),
    };
    let (status, body) = match outbound.host_request(name, "GET", path, &query).await {
        Ok(answer) => answer,
        Err(e) => return found(false, e),
    };
    let body = String::from_utf8_lossy(&body);
    match (kind, status) {
        (Kind::Tmdb, 200) => {
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
        (Kind::Tmdb, 401) => found(false, "TMDB refused the credential: check the API key or read token"),
        (Kind::Torznab, 200) => torznab_caps(&body),
        (Kind::Qbittorrent, 200) => found(true, format!("qBittorrent {}", body.trim())),
        (Kind::Qbittorrent, 403) => found(false, "qBittorrent refused the login: check the user and password"),
        (_, status) => {
            found(false, format!("{name} answered HTTP {status}: {}", body.chars().take(200).collect::<String>()))
        }
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

/// Tests the roots as they are in effect.
pub async fn roots(runtime: &Runtime) -> Found {
    let roots = runtime.root_paths();
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
    result.unwrap_or_else(|e| found(false, format!("the test could not run: {e}")))
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
