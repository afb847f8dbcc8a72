//! A media server on loopback, answering as Jellyfin, Emby or Plex do:
//! Jellyfin takes only `Authorization: MediaBrowser Token="<key>"` (as
//! Jellyfin 12 does: `X-Emby-Token` is refused), Emby `X-Emby-Token` under
//! its `/emby` base path, Plex `X-Plex-Token`; another key is 401. It
//! answers `/System/Info` (Jellyfin, Emby) and `/library/sections` (Plex:
//! XML, or JSON when asked), takes library update notices (`POST
//! /Library/Media/Updated`: 204) and section refreshes (`POST
//! /library/sections/<key>/refresh?path=`: 200), and records each folder
//! it was asked to rescan. It lists the titles it holds by name (`GET
//! /Items?SearchTerm=` with `ProviderIds`; Plex `GET /library/all?title=`
//! with `Guid`s when `includeGuids=1`). Tests queue statuses to answer
//! instead.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};

/// Which server it plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Jellyfin,
    Emby,
    Plex,
}

struct Shared {
    kind: Kind,
    key: String,
    /// Plex's library sections: (key, title, folder).
    sections: Vec<(String, String, String)>,
    rescanned: Mutex<Vec<String>>,
    /// Titles it holds: (TMDB id, name, year).
    held: Mutex<Vec<(i64, String, i64)>>,
    requests: Mutex<usize>,
    answers: Mutex<VecDeque<u16>>,
}

/// A running server.
pub struct MockMediaServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockMediaServer {
    /// A server of `kind` taking `key`; Plex with one movie section whose
    /// folder is `library`.
    pub async fn start(kind: Kind, key: &str, library: &str) -> MockMediaServer {
        let sections = vec![
            ("1".to_string(), "Movies".to_string(), library.trim_end_matches('/').to_string()),
            ("2".to_string(), "TV Shows".to_string(), "/data/tv".to_string()),
        ];
        let shared = Arc::new(Shared {
            kind,
            key: key.into(),
            sections,
            rescanned: Mutex::new(Vec::new()),
            held: Mutex::new(Vec::new()),
            requests: Mutex::new(0),
            answers: Mutex::new(VecDeque::new()),
        });
        let app = Router::new().fallback(any(receive)).with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
        MockMediaServer { addr, shared }
    }

    /// The base URL a user gives: Emby's under `/emby`.
    pub fn base_url(&self) -> String {
        match self.shared.kind {
            Kind::Emby => format!("http://{}/emby", self.addr),
            _ => format!("http://{}", self.addr),
        }
    }

    /// The folders it was asked to rescan, in order.
    pub fn rescanned(&self) -> Vec<String> {
        self.shared.rescanned.lock().unwrap().clone()
    }

    /// How many requests it received.
    pub fn requests(&self) -> usize {
        *self.shared.requests.lock().unwrap()
    }

    /// Holds a title from now on.
    pub fn hold(&self, tmdb_id: i64, name: &str, year: i64) {
        self.shared.held.lock().unwrap().push((tmdb_id, name.into(), year));
    }

    /// Answers the next requests with `statuses`, in order.
    pub fn answer(&self, statuses: &[u16]) {
        self.shared.answers.lock().unwrap().extend(statuses);
    }
}

/// The key the request carries, the way this kind of server reads it.
fn key_of(kind: Kind, headers: &HeaderMap, query: &BTreeMap<String, String>) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    match kind {
        Kind::Jellyfin => {
            let auth = header("authorization")?;
            let params = auth.strip_prefix("MediaBrowser ")?;
            params.split(',').find_map(|p| p.trim().strip_prefix("Token=\"")?.strip_suffix('"').map(str::to_string))
        }
        Kind::Emby => header("x-emby-token").or_else(|| query.get("api_key").cloned()),
        Kind::Plex => header("x-plex-token").or_else(|| query.get("X-Plex-Token").cloned()),
    }
}

fn sections(s: &Shared, json: bool) -> Response {
    if json {
        let directories: Vec<Value> = s
            .sections
            .iter()
            .map(|(key, title, path)| json!({"key": key, "title": title, "type": "movie", "Location": [{"id": 1, "path": path}]}))
            .collect();
        let body = json!({"MediaContainer": {"size": directories.len(), "Directory": directories}});
        return ([("Content-Type", "application/json")], body.to_string()).into_response();
    }
    let mut xml = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MediaContainer size=\"{}\">", s.sections.len());
    for (key, title, path) in &s.sections {
        xml.push_str(&format!(
            "<Directory key=\"{key}\" type=\"movie\" title=\"{title}\"><Location id=\"{key}\" path=\"{path}\" /></Directory>"
        ));
    }
    xml.push_str("</MediaContainer>");
    ([("Content-Type", "text/xml")], xml).into_response()
}

async fn receive(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> Response {
    *s.requests.lock().unwrap() += 1;
    if let Some(status) = s.answers.lock().unwrap().pop_front() {
        return (StatusCode::from_u16(status).unwrap(), "queued answer").into_response();
    }
    if key_of(s.kind, &headers, &query).as_deref() != Some(s.key.as_str()) {
        return (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    }
    let path = match s.kind {
        Kind::Emby => match uri.path().strip_prefix("/emby") {
            Some(rest) => rest.to_string(),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
        _ => uri.path().to_string(),
    };
    match (s.kind, method.as_str(), path.as_str()) {
        (Kind::Jellyfin | Kind::Emby, "GET", "/System/Info") => {
            let product = if s.kind == Kind::Jellyfin { "10.10.3" } else { "4.8.10.0" };
            let info = json!({"ServerName": "Loopback", "Version": product, "Id": "f4c2a1"});
            ([("Content-Type", "application/json")], info.to_string()).into_response()
        }
        (Kind::Jellyfin | Kind::Emby, "POST", "/Library/Media/Updated") => {
            let Ok(notice) = serde_json::from_slice::<Value>(&body) else {
                return (StatusCode::BAD_REQUEST, "not JSON").into_response();
            };
            let updates = notice["Updates"].as_array().cloned().unwrap_or_default();
            let paths: Vec<String> = updates.iter().filter_map(|u| u["Path"].as_str().map(str::to_string)).collect();
            s.rescanned.lock().unwrap().extend(paths);
            StatusCode::NO_CONTENT.into_response()
        }
        (Kind::Jellyfin | Kind::Emby, "GET", "/Items") => {
            let term = query.get("SearchTerm").cloned().unwrap_or_default().to_lowercase();
            let held = s.held.lock().unwrap().clone();
            let items: Vec<Value> = held
                .iter()
                .filter(|(_, name, _)| name.to_lowercase().contains(&term))
                .map(|(id, name, year)| {
                    json!({"Name": name, "ProductionYear": year, "Type": "Movie",
                    "ProviderIds": {"Tmdb": id.to_string(), "Imdb": "tt0000000"}})
                })
                .collect();
            let body = json!({"Items": items, "TotalRecordCount": items.len(), "StartIndex": 0});
            ([("Content-Type", "application/json")], body.to_string()).into_response()
        }
        (Kind::Plex, "GET", "/library/all") => {
            let title = query.get("title").cloned().unwrap_or_default().to_lowercase();
            let guids = query.get("includeGuids").is_some_and(|v| v == "1");
            let held = s.held.lock().unwrap().clone();
            let items: Vec<Value> = held
                .iter()
                .filter(|(_, name, _)| name.to_lowercase().contains(&title))
                .map(|(id, name, year)| {
                    let mut item = json!({"title": name, "year": year, "type": "movie"});
                    if guids {
                        item["Guid"] = json!([{"id": format!("tmdb://{id}")}, {"id": "imdb://tt0000000"}]);
                    }
                    item
                })
                .collect();
            let body = json!({"MediaContainer": {"size": items.len(), "Metadata": items}});
            ([("Content-Type", "application/json")], body.to_string()).into_response()
        }
        (Kind::Plex, "GET", "/library/sections") => {
            let json = headers.get("accept").and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("json"));
            sections(&s, json)
        }
        (Kind::Plex, "POST", refresh) if refresh.starts_with("/library/sections/") && refresh.ends_with("/refresh") => {
            let key = refresh.trim_start_matches("/library/sections/").trim_end_matches("/refresh");
            if !s.sections.iter().any(|(k, _, _)| k == key) {
                return StatusCode::NOT_FOUND.into_response();
            }
            s.rescanned.lock().unwrap().extend(query.get("path").cloned());
            StatusCode::OK.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
