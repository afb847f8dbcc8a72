//! A private tracker's RSS feed on loopback, answering as such trackers
//! do: `GET /rss.php?passkey=<key>&cat=<n>` is an RSS 2.0 feed of the
//! category's torrents, written as trackers write them (a `.torrent` link
//! carrying the passkey, the hash, unless told not to, and seeds in ezRSS
//! elements); `GET
//! /download.php?id=<n>&passkey=<key>` is the `.torrent`. A wrong or
//! missing passkey is 403 with a page saying so, as the web server of a
//! tracker answers. It records the query of every request.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::torrent::BuiltTorrent;

/// One torrent the tracker lists.
#[derive(Clone)]
pub struct Listed {
    pub torrent: BuiltTorrent,
    pub category: u32,
    pub seeds: u32,
}

struct Shared {
    base_url: String,
    passkey: String,
    listed: Vec<Listed>,
    /// Whether items carry their hash (many trackers' feeds do not).
    hashes: AtomicBool,
    requests: Mutex<Vec<(String, BTreeMap<String, String>)>>,
}

/// A running tracker.
pub struct MockRss {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockRss {
    /// A tracker whose member's passkey is `passkey`, listing `listed`.
    pub async fn start(passkey: &str, listed: Vec<Listed>) -> MockRss {
        let listener = crate::loopback::listener().await;
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            base_url,
            passkey: passkey.into(),
            listed,
            hashes: AtomicBool::new(true),
            requests: Mutex::new(Vec::new()),
        });
        let app =
            Router::new().route("/rss.php", get(feed)).route("/download.php", get(download)).with_state(shared.clone());
        let addr = crate::loopback::serve_on(listener, app);
        MockRss { addr, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Lists torrents by their link alone, as many trackers' feeds do.
    pub fn without_hashes(&self) {
        self.shared.hashes.store(false, Ordering::SeqCst);
    }

    /// Each request's path and query, in order.
    pub fn requests(&self) -> Vec<(String, BTreeMap<String, String>)> {
        self.shared.requests.lock().unwrap().clone()
    }
}

fn refused() -> Response {
    (StatusCode::FORBIDDEN, "<html><body>Invalid passkey</body></html>").into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

async fn feed(State(shared): State<Arc<Shared>>, Query(query): Query<BTreeMap<String, String>>) -> Response {
    shared.requests.lock().unwrap().push(("/rss.php".into(), query.clone()));
    if query.get("passkey") != Some(&shared.passkey) {
        return refused();
    }
    let category: Option<u32> = query.get("cat").and_then(|c| c.parse().ok());
    let mut items = String::new();
    for (id, listed) in shared.listed.iter().enumerate() {
        if category.is_some_and(|c| c != listed.category) {
            continue;
        }
        let link = escape(&format!("{}/download.php?id={id}&passkey={}", shared.base_url, shared.passkey));
        let length: usize =
            listed.torrent.files.iter().map(|f| std::fs::metadata(f).map_or(0, |m| m.len() as usize)).sum();
        items.push_str(&format!(
            "<item><title>{title}</title><link>{link}</link><guid>{base}/details.php?id={id}</guid>\
             <pubDate>Sat, 02 Mar 2024 09:00:00 +0000</pubDate>\
             <enclosure url=\"{link}\" length=\"{length}\" type=\"application/x-bittorrent\"/>\
             {hash}<torrent:seeds>{seeds}</torrent:seeds></item>",
            title = escape(listed.torrent.name.trim_end_matches(".mkv")),
            hash = if shared.hashes.load(Ordering::SeqCst) {
                format!("<torrent:infoHash>{}</torrent:infoHash>", listed.torrent.info_hash.to_ascii_uppercase())
            } else {
                String::new()
            },
            seeds = listed.seeds,
            base = shared.base_url,
        ));
    }
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <rss version=\"2.0\" xmlns:torrent=\"http://xmlns.ezrss.it/0.1/\"><channel><title>Loopback tracker</title>\
         {items}</channel></rss>"
    );
    ([(header::CONTENT_TYPE, "application/rss+xml; charset=utf-8")], body).into_response()
}

async fn download(State(shared): State<Arc<Shared>>, Query(query): Query<BTreeMap<String, String>>) -> Response {
    shared.requests.lock().unwrap().push(("/download.php".into(), query.clone()));
    if query.get("passkey") != Some(&shared.passkey) {
        return refused();
    }
    let listed = query.get("id").and_then(|id| id.parse::<usize>().ok()).and_then(|id| shared.listed.get(id));
    match listed {
        Some(listed) => {
            ([(header::CONTENT_TYPE, "application/x-bittorrent")], listed.torrent.bytes.clone()).into_response()
        }
        None => (StatusCode::NOT_FOUND, "<html><body>No such torrent</body></html>").into_response(),
    }
}
