//! Whether the media servers already hold a title (`mediaServers: true`):
//! each of Jellyfin, Emby and Plex that is set up (the services of those
//! names; one that is not is left out) is asked by title — Jellyfin and
//! Emby `GET /Items?SearchTerm=…&Fields=ProviderIds`, Plex `GET
//! /library/all?title=…&includeGuids=1` — and holds the title when an
//! item carries its TMDB id, or, when either side lacks one, the same
//! name and year. Reads only; a server that fails says why for that title.

use capstan_sdk::HostError;
use capstan_sdk::host::{Request, Response, outbound};
use serde::Serialize;
use serde_json::Value;

/// The media servers, each the service of its name.
pub const SERVERS: [&str; 3] = ["jellyfin", "emby", "plex"];

/// Most titles one call asks the servers about.
pub const MAX_TITLES: usize = 25;

/// What one server said of one title.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OnServer {
    pub server: String,
    /// Whether it holds the title; absent when it could not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds: Option<bool>,
    /// Why it could not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The title asked about.
pub struct Title<'a> {
    pub series: bool,
    pub title: &'a str,
    pub year: Option<i64>,
    pub tmdb_id: Option<i64>,
}

impl Title<'_> {
    /// Whether an item a server listed is this title.
    fn is(&self, tmdb: Option<String>, name: Option<&str>, year: Option<i64>) -> bool {
        match (self.tmdb_id, tmdb) {
            (Some(ours), Some(theirs)) => theirs.trim() == ours.to_string(),
            _ => name.is_some_and(|n| n.eq_ignore_ascii_case(self.title)) && (self.year.is_none() || year == self.year),
        }
    }
}

fn json_get(server: &str, path: &str, query: Vec<(String, String)>) -> Result<Option<Value>, String> {
    let mut req = Request::get(server, path);
    req.query = query;
    req.headers.push(("Accept".into(), "application/json".into()));
    match outbound::read(req) {
        // Not set up: nothing to say about it.
        Err(HostError::NotFound(_)) => Ok(None),
        Err(e) => Err(format!("{e:?}")),
        Ok(Response { status: 200, body, .. }) => {
            serde_json::from_slice(&body).map(Some).map_err(|_| "it did not answer JSON".to_string())
        }
        Ok(Response { status, .. }) => Err(format!("it answered {status}")),
    }
}

/// Jellyfin's or Emby's items named like the title.
fn emby_like(server: &str, t: &Title) -> Result<Option<bool>, String> {
    let kind = if t.series { "Series" } else { "Movie" };
    let query = vec![
        ("Recursive".to_string(), "true".to_string()),
        ("IncludeItemTypes".to_string(), kind.to_string()),
        ("SearchTerm".to_string(), t.title.to_string()),
        ("Fields".to_string(), "ProviderIds,ProductionYear".to_string()),
        ("Limit".to_string(), "50".to_string()),
    ];
    let Some(listed) = json_get(server, "/Items", query)? else { return Ok(None) };
    let items = listed["Items"].as_array().cloned().unwrap_or_default();
    Ok(Some(items.iter().any(|item| {
        let ids = item["ProviderIds"].as_object();
        let tmdb = ids.and_then(|ids| ids.iter().find(|(k, _)| k.eq_ignore_ascii_case("tmdb")));
        let tmdb = tmdb.and_then(|(_, v)| v.as_str().map(str::to_string));
        t.is(tmdb, item["Name"].as_str(), item["ProductionYear"].as_i64())
    })))
}

/// Plex's items named like the title, with their external ids.
fn plex(t: &Title) -> Result<Option<bool>, String> {
    let kind = if t.series { "2" } else { "1" };
    let query = vec![
        ("type".to_string(), kind.to_string()),
        ("title".to_string(), t.title.to_string()),
        ("includeGuids".to_string(), "1".to_string()),
    ];
    let Some(listed) = json_get("plex", "/library/all", query)? else { return Ok(None) };
    let items = listed["MediaContainer"]["Metadata"].as_array().cloned().unwrap_or_default();
    Ok(Some(items.iter().any(|item| {
        let guids = item["Guid"].as_array().cloned().unwrap_or_default();
        let tmdb = guids.iter().find_map(|g| g["id"].as_str()?.strip_prefix("tmdb://").map(str::to_string));
        t.is(tmdb, item["title"].as_str(), item["year"].as_i64())
    })))
}

/// What each server that is set up says of `t`.
pub fn ask(t: &Title) -> Vec<OnServer> {
    SERVERS
        .iter()
        .filter_map(|server| {
            let said = if *server == "plex" { plex(t) } else { emby_like(server, t) };
            match said {
                Ok(None) => None,
                Ok(Some(holds)) => Some(OnServer { server: server.to_string(), holds: Some(holds), error: None }),
                Err(why) => Some(OnServer { server: server.to_string(), holds: None, error: Some(why) }),
            }
        })
        .collect()
}
