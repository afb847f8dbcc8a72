//! Capability `mediaserver.refresh` (label execute): asks one media server
//! — Jellyfin, Emby or Plex, each the outbound service of its name — to
//! rescan just the folders a download went into, as the server sees them.
//! Jellyfin and Emby are told of the folders in one `POST
//! /Library/Media/Updated` (Emby under its `/emby` base path), which scans
//! only those; Plex is asked per folder, `POST
//! /library/sections/<key>/refresh?path=<folder>` in the library section
//! whose location holds it (read from `GET /library/sections`). The
//! server's key or token is the host's. A folder outside every Plex
//! section is said, not guessed; 401 says the key was refused; 429 and 5xx
//! are `unavailable`, to be tried again.

#[cfg(test)]
mod tests;

use capstan_sdk::host::{Request, Response, outbound};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The media servers, each the service of its name.
pub const SERVERS: [&str; 3] = ["jellyfin", "emby", "plex"];

/// Most folders one call rescans.
pub const MAX_FOLDERS: usize = 100;
/// Longest folder path taken.
pub const MAX_PATH: usize = 1000;

/// Input: the server and the folders, as the server sees them.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefreshInput {
    /// `jellyfin`, `emby` or `plex`.
    pub server: String,
    /// Absolute folders as the media server sees them (`/media/movies/Dune
    /// (2021)`), 1 to 100.
    pub folders: Vec<String>,
}

/// Output: what the server was asked.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refreshed {
    pub server: String,
    /// The folders it was asked to rescan.
    pub folders: Vec<String>,
    /// For Plex: the library section each folder was rescanned in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<String>,
}

/// The capability.
pub struct MediaServerRefresh;

/// The server's name as people write it.
fn named(server: &str) -> &'static str {
    match server {
        "jellyfin" => "Jellyfin",
        "emby" => "Emby",
        _ => "Plex",
    }
}

/// `invalid-input` unless every folder is an absolute path without dot
/// segments or control characters.
fn checked(input: &RefreshInput) -> Result<(), Failure> {
    if !SERVERS.contains(&input.server.as_str()) {
        return Err(Failure::InvalidInput(format!("server must be jellyfin, emby or plex, not {:?}", input.server)));
    }
    if input.folders.is_empty() || input.folders.len() > MAX_FOLDERS {
        return Err(Failure::InvalidInput(format!("give 1 to {MAX_FOLDERS} folders, not {}", input.folders.len())));
    }
    for folder in &input.folders {
        let absolute = folder.starts_with('/') || folder.get(1..3) == Some(":\\");
        let dotted = folder.split(['/', '\\']).any(|s| s == "." || s == "..");
        if !absolute || dotted || folder.chars().count() > MAX_PATH || folder.chars().any(char::is_control) {
            return Err(Failure::InvalidInput(format!(
                "{folder:?} is not a folder as the server sees it: an absolute path without . or .. (at most \
                 {MAX_PATH} characters)"
            )));
        }
    }
    Ok(())
}

/// What a server's answer means.
fn answered(server: &str, answer: &Response) -> Result<(), Failure> {
    let said: String = String::from_utf8_lossy(&answer.body).chars().take(200).collect();
    let name = named(server);
    match answer.status {
        200..=299 => Ok(()),
        401 | 403 => Err(Failure::Denied(format!(
            "{name} refused the key ({}): check it under Services and press Test",
            answer.status
        ))),
        429 | 500..=599 => Err(Failure::Unavailable(format!("{name} answered {}: {said}", answer.status))),
        status => Err(Failure::InvalidInput(format!("{name} refused the rescan ({status}): {said}"))),
    }
}

/// Jellyfin and Emby: one notice of every folder.
fn tell_updated(server: &str, folders: &[String]) -> Result<(), Failure> {
    let updates: Vec<Value> = folders.iter().map(|f| json!({"Path": f, "UpdateType": "Created"})).collect();
    let answer = outbound::write(Request {
        service: server.into(),
        method: "POST".into(),
        path: "/Library/Media/Updated".into(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Some(json!({ "Updates": updates }).to_string().into_bytes()),
        ..Request::default()
    })?;
    answered(server, &answer)
}

/// One Plex library section and the folders it holds.
struct Section {
    key: String,
    title: String,
    locations: Vec<String>,
}

/// Plex's library sections, read as JSON.
fn plex_sections() -> Result<Vec<Section>, Failure> {
    let mut req = Request::get("plex", "/library/sections");
    req.headers.push(("Accept".into(), "application/json".into()));
    let answer = outbound::read(req)?;
    answered("plex", &answer)?;
    let listed: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| Failure::Unavailable("Plex's library sections are not JSON".into()))?;
    let directories = listed["MediaContainer"]["Directory"].as_array().cloned().unwrap_or_default();
    Ok(directories
        .iter()
        .filter_map(|d| {
            let key = d["key"].as_str()?.to_string();
            let title = d["title"].as_str().unwrap_or(&key).to_string();
            let locations = d["Location"]
                .as_array()
                .map(|ls| ls.iter().filter_map(|l| l["path"].as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            Some(Section { key, title, locations })
        })
        .collect())
}

/// Whether `folder` is `location` or under it.
fn under(folder: &str, location: &str) -> bool {
    let location = location.trim_end_matches(['/', '\\']);
    folder == location || folder.strip_prefix(location).is_some_and(|rest| rest.starts_with(['/', '\\']))
}

/// Plex: each folder rescanned in the section whose location holds it;
/// a folder no section holds is said before any is rescanned.
fn plex_refresh(folders: &[String]) -> Result<Vec<String>, Failure> {
    let sections = plex_sections()?;
    let mut holding = Vec::new();
    for folder in folders {
        let Some(section) = sections.iter().find(|s| s.locations.iter().any(|l| under(folder, l))) else {
            let known: Vec<&str> = sections.iter().flat_map(|s| s.locations.iter().map(String::as_str)).collect();
            return Err(Failure::InvalidInput(format!(
                "no Plex library holds {folder}: its libraries hold {}; add the folder to one, or set the library \
                 path Plex sees under Services",
                if known.is_empty() { "nothing".to_string() } else { known.join(", ") }
            )));
        };
        holding.push((folder, section));
    }
    let mut asked = Vec::new();
    for (folder, section) in holding {
        let answer = outbound::write(Request {
            service: "plex".into(),
            method: "POST".into(),
            path: format!("/library/sections/{}/refresh", section.key),
            query: vec![("path".into(), folder.clone())],
            ..Request::default()
        })?;
        answered("plex", &answer)?;
        asked.push(section.title.clone());
    }
    Ok(asked)
}

impl Capability for MediaServerRefresh {
    type Input = RefreshInput;
    type Output = Refreshed;

    const META: Meta = Meta {
        id: "mediaserver.refresh",
        version: 1,
        label: Label::Execute,
        summary: "Ask Jellyfin, Emby or Plex to rescan the folders a download went into",
        description: "Asks one media server (server: jellyfin, emby or plex, each set up as the service of its name) to rescan just the given folders, absolute as the server sees them: Jellyfin and Emby in one library update notice, Plex per folder in the library section that holds it. The server's key is added by the host. A folder no Plex library holds is refused with the folders Plex has; 429 and 5xx are unavailable, to be tried again.",
        tags: &["mediaserver", "jellyfin", "emby", "plex", "library"],
        aliases: &["rescan library", "refresh jellyfin", "refresh plex", "scan library", "刷新媒体库"],
        // Asking again is another scan of the same folders: nothing changes twice.
        replay: Replay::Safe,
        services: &SERVERS,
    };

    fn invoke(input: RefreshInput) -> Result<Outcome<Refreshed>, Failure> {
        checked(&input)?;
        let mut folders = input.folders.clone();
        folders.sort();
        folders.dedup();
        let sections = match input.server.as_str() {
            "plex" => plex_refresh(&folders)?,
            server => {
                tell_updated(server, &folders)?;
                Vec::new()
            }
        };
        Ok(Outcome::Succeeded(Refreshed { server: input.server, folders, sections }))
    }
}

capstan_sdk::export_capability!(MediaServerRefresh);
