//! A Torznab indexer on loopback: `/api?t=caps` answers a caps document,
//! `t=search|movie|tvsearch` an RSS 2.0 feed with `torznab:attr` elements,
//! filtered by `q`, `imdbid`, `tmdbid`, `tvdbid`, `season`, `ep` and `cat`.
//! It is strict where real indexers differ: a function its caps do not
//! offer or a parameter they do not list is answered with a Torznab error,
//! so a test fails if a client ignores the caps. Tests switch it into a
//! failure mode and read back every query it received.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One release the indexer lists.
#[derive(Debug, Clone, Default)]
pub struct Item {
    pub title: &'static str,
    pub size: u64,
    pub seeders: u32,
    pub peers: u32,
    /// Sent as the `infohash` attribute when set.
    pub infohash: Option<&'static str>,
    /// Sent as the `magneturl` attribute when set.
    pub magnet: Option<&'static str>,
    pub categories: &'static [u32],
    /// `tt...`.
    pub imdb_id: Option<&'static str>,
    pub tmdb_id: Option<u64>,
    pub tvdb_id: Option<u64>,
    pub season: Option<u32>,
    pub episode: Option<u32>,
    /// RFC 2822.
    pub pub_date: &'static str,
}

/// What the indexer says it can do and what it lists.
#[derive(Debug, Clone)]
pub struct Indexer {
    pub title: &'static str,
    /// `supportedParams` of `movie-search`; `None` when not offered.
    pub movie_params: Option<&'static str>,
    /// `supportedParams` of `tv-search`; `None` when not offered.
    pub tv_params: Option<&'static str>,
    pub items: Vec<Item>,
}

/// A way the indexer can be told to fail every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 200 with `<error code="100" .../>`, as some indexers answer a bad key.
    ErrorDocument,
    /// 429 with `Retry-After`.
    RateLimited { retry_after_secs: u32 },
    /// 500 with an HTML body.
    ServerError,
    /// 200 with a feed cut off mid-item.
    Malformed,
    /// The caps answer normally; searches fail with 500. Shows that an
    /// indexer can fail after its caps were read.
    SearchServerError,
}

struct Shared {
    key: String,
    indexer: Indexer,
    /// Items not listed yet (by index), as releases not yet published.
    unlisted: Mutex<std::collections::BTreeSet<usize>>,
    failure: Mutex<Option<Failure>>,
    received: Mutex<Vec<BTreeMap<String, String>>>,
    /// `.torrent` files served at `/download/<n>.torrent`, by item number;
    /// when any are set, feed links point at this server instead of
    /// `indexer.example`.
    files: Mutex<BTreeMap<usize, Vec<u8>>>,
    base: Mutex<String>,
    /// Whether a `.torrent` link needs `apikey` too, as Jackett's and
    /// Prowlarr's do; and how many were fetched with it.
    downloads_need_key: Mutex<bool>,
    keyed_downloads: Mutex<usize>,
    /// How long each search is held before it is answered, and how many
    /// searches were held at once: now, and at most.
    hold: Mutex<Duration>,
    /// Searches wait while this is false (see [`MockTorznab::close_searches`]).
    open: tokio::sync::watch::Sender<bool>,
    searching: AtomicUsize,
    most_searching: AtomicUsize,
}

/// Counts a search as in progress until it is answered or its caller
/// went away (the handler is dropped).
struct Searching(Arc<Shared>);

impl Searching {
    fn begin(shared: &Arc<Shared>) -> Searching {
        let now = shared.searching.fetch_add(1, Ordering::SeqCst) + 1;
        shared.most_searching.fetch_max(now, Ordering::SeqCst);
        Searching(shared.clone())
    }
}

impl Drop for Searching {
    fn drop(&mut self) {
        self.0.searching.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running mock indexer.
pub struct MockTorznab {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockTorznab {
    /// Starts the indexer on 127.0.0.1 with a free port; requests must carry
    /// `apikey=<key>`.
    pub async fn start(key: &str, indexer: Indexer) -> MockTorznab {
        let shared = Arc::new(Shared {
            key: key.to_string(),
            indexer,
            unlisted: Mutex::new(Default::default()),
            failure: Mutex::new(None),
            received: Mutex::new(Vec::new()),
            files: Mutex::new(BTreeMap::new()),
            base: Mutex::new("https://indexer.example".into()),
            downloads_need_key: Mutex::new(false),
            keyed_downloads: Mutex::new(0),
            hold: Mutex::new(Duration::ZERO),
            open: tokio::sync::watch::channel(true).0,
            searching: AtomicUsize::new(0),
            most_searching: AtomicUsize::new(0),
        });
        let app =
            Router::new().route("/api", get(api)).route("/download/{file}", get(download)).with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
        MockTorznab { addr, shared }
    }

    /// An indexer titled `title` whose feed offers `torrent` as Dune: Part
    /// Two (TMDB 693134, a movie, 12 seeders) and serves its `.torrent`
    /// file, as the acquisition suites need it.
    pub async fn offering_dune(key: &str, title: &'static str, torrent: &crate::torrent::BuiltTorrent) -> MockTorznab {
        let leak = |text: &str| -> &'static str { Box::leak(text.to_string().into_boxed_str()) };
        let item = Item {
            title: leak(&torrent.name),
            size: 70_000,
            seeders: 12,
            peers: 14,
            infohash: Some(leak(&torrent.info_hash)),
            categories: &[2000, 2045],
            tmdb_id: Some(693134),
            pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
            ..Item::default()
        };
        let indexer = Indexer { title, movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items: vec![item] };
        let server = MockTorznab::start(key, indexer).await;
        server.serve_torrent(0, torrent.bytes.clone());
        server
    }

    /// The base URL to configure (`/api` is appended to it).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves `bytes` as the `.torrent` file of item `index` (0-based) and
    /// points the feed's links at this server, as a real indexer's
    /// download links point at itself.
    pub fn serve_torrent(&self, index: usize, bytes: Vec<u8>) {
        self.shared.files.lock().unwrap().insert(index + 1, bytes);
        *self.shared.base.lock().unwrap() = self.base_url();
    }

    /// Answers a `.torrent` link without the indexer's `apikey` with 401,
    /// as Jackett and Prowlarr do.
    pub fn require_key_for_downloads(&self) {
        *self.shared.downloads_need_key.lock().unwrap() = true;
    }

    /// How many `.torrent` files were fetched with the right key.
    pub fn keyed_downloads(&self) -> usize {
        *self.shared.keyed_downloads.lock().unwrap()
    }

    /// Stops serving item `index`'s `.torrent` file (its link answers 404,
    /// as an indexer's does for a release it dropped) until it is served
    /// again.
    /// Leaves item `index` out of every answer until [`Self::publish`].
    pub fn unpublish(&self, index: usize) {
        self.shared.unlisted.lock().unwrap().insert(index);
    }

    /// Lists item `index` again, as a release that has just appeared.
    pub fn publish(&self, index: usize) {
        self.shared.unlisted.lock().unwrap().remove(&index);
    }

    pub fn withdraw_torrent(&self, index: usize) {
        self.shared.files.lock().unwrap().remove(&(index + 1));
    }

    /// Makes later requests fail this way; `None` recovers.
    pub fn fail_with(&self, failure: Option<Failure>) {
        *self.shared.failure.lock().unwrap() = failure;
    }

    /// Holds every later search for `hold` before answering it, as a slow
    /// indexer does.
    pub fn hold_searches(&self, hold: Duration) {
        *self.shared.hold.lock().unwrap() = hold;
    }

    /// Keeps every search waiting, unanswered, until
    /// [`MockTorznab::open_searches`].
    pub fn close_searches(&self) {
        self.shared.open.send_replace(false);
    }

    /// Lets the searches that wait be answered, and later ones too.
    pub fn open_searches(&self) {
        self.shared.open.send_replace(true);
    }

    /// How many searches are being answered now.
    pub fn searching(&self) -> usize {
        self.shared.searching.load(Ordering::SeqCst)
    }

    /// The most searches that were being answered at once.
    pub fn most_searching_at_once(&self) -> usize {
        self.shared.most_searching.load(Ordering::SeqCst)
    }

    /// The query of every request received so far, in order.
    pub fn received(&self) -> Vec<BTreeMap<String, String>> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The queries of searches (everything but `t=caps`).
    pub fn searches(&self) -> Vec<BTreeMap<String, String>> {
        self.received().into_iter().filter(|q| q.get("t").map(String::as_str) != Some("caps")).collect()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn xml(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "application/xml; charset=utf-8")], body).into_response()
}

fn torznab_error(status: StatusCode, code: u32, description: &str) -> Response {
    xml(
        status,
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><error code="{code}" description="{}" />"#,
            escape(description)
        ),
    )
}

async fn api(State(s): State<Arc<Shared>>, Query(q): Query<BTreeMap<String, String>>) -> Response {
    s.received.lock().unwrap().push(q.clone());
    if q.get("apikey") != Some(&s.key) {
        return torznab_error(StatusCode::UNAUTHORIZED, 100, "Invalid API Key");
    }
    let function = q.get("t").map(String::as_str).unwrap_or("");
    let failure = *s.failure.lock().unwrap();
    match (failure, function) {
        (Some(Failure::SearchServerError), _) | (None, _) => {}
        (Some(Failure::ErrorDocument), _) => return torznab_error(StatusCode::OK, 100, "Incorrect user credentials"),
        (Some(Failure::RateLimited { retry_after_secs }), _) => {
            let body = r#"<error code="500" description="Request limit reached"/>"#;
            return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", retry_after_secs.to_string())], body)
                .into_response();
        }
        (Some(Failure::ServerError), _) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "<html><body>Internal Server Error</body></html>")
                .into_response();
        }
        (Some(Failure::Malformed), _) => {
            return xml(StatusCode::OK, "<rss version=\"2.0\"><channel><item><title>Cut off".into());
        }
    }
    let _searching = (function != "caps").then(|| Searching::begin(&s));
    let hold = *s.hold.lock().unwrap();
    if function != "caps" {
        let _ = s.open.subscribe().wait_for(|open| *open).await;
        tokio::time::sleep(hold).await;
        // A search that fails is held like one that answers.
        if failure == Some(Failure::SearchServerError) {
            return (StatusCode::INTERNAL_SERVER_ERROR, "<html><body>Internal Server Error</body></html>")
                .into_response();
        }
    }
    let indexer = &s.indexer;
    let offered = match function {
        "caps" => return xml(StatusCode::OK, caps(indexer)),
        "search" => Some("q"),
        "movie" => indexer.movie_params,
        "tvsearch" => indexer.tv_params,
        other => return torznab_error(StatusCode::OK, 202, &format!("No such function ({other})")),
    };
    let Some(offered) = offered else {
        return torznab_error(StatusCode::OK, 203, &format!("Function not available ({function})"));
    };
    let narrowing = ["q", "imdbid", "tmdbid", "tvdbid", "season", "ep"];
    if let Some(unlisted) = narrowing.iter().find(|p| q.contains_key(**p) && !offered.split(',').any(|o| o == **p)) {
        return torznab_error(StatusCode::OK, 201, &format!("Incorrect parameter ({unlisted})"));
    }
    // Each release keeps its own link and guid whatever a search leaves
    // out, as a real indexer's do.
    let unlisted = s.unlisted.lock().unwrap().clone();
    let items: Vec<(usize, &Item)> =
        indexer.items.iter().enumerate().filter(|(i, item)| !unlisted.contains(i) && wanted(item, &q)).collect();
    let base = s.base.lock().unwrap().clone();
    xml(StatusCode::OK, feed(indexer.title, &items, &base))
}

fn caps(indexer: &Indexer) -> String {
    let mode = |tag: &str, params: Option<&str>| match params {
        Some(p) => format!(r#"<{tag} available="yes" supportedParams="{p}"/>"#),
        None => format!(r#"<{tag} available="no" supportedParams="q"/>"#),
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<caps>
  <server version="1.0" title="{title}"/>
  <limits max="100" default="50"/>
  <searching>
    <search available="yes" supportedParams="q"/>
    {tv}
    {movie}
  </searching>
  <categories>
    <category id="2000" name="Movies"><subcat id="2040" name="Movies/HD"/><subcat id="2045" name="Movies/UHD"/></category>
    <category id="5000" name="TV"><subcat id="5040" name="TV/HD"/><subcat id="5045" name="TV/UHD"/></category>
  </categories>
</caps>"#,
        title = escape(indexer.title),
        tv = mode("tv-search", indexer.tv_params),
        movie = mode("movie-search", indexer.movie_params),
    )
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn digits(imdb: &str) -> &str {
    imdb.trim_start_matches("tt").trim_start_matches('0')
}

/// Whether `item` answers the query: every given filter must match.
fn wanted(item: &Item, q: &BTreeMap<String, String>) -> bool {
    let title_words = words(item.title);
    let q_ok = q.get("q").is_none_or(|text| words(text).iter().all(|w| title_words.contains(w)));
    let imdb_ok = q.get("imdbid").is_none_or(|id| item.imdb_id.is_some_and(|mine| digits(mine) == digits(id)));
    let num =
        |name: &str, mine: Option<u64>| q.get(name).is_none_or(|v| v.parse::<u64>().ok() == mine && mine.is_some());
    let cat_ok = q.get("cat").is_none_or(|cats| {
        cats.split(',').filter_map(|c| c.parse::<u32>().ok()).any(|want| {
            item.categories.iter().any(|have| *have == want || (want % 1000 == 0 && have / 1000 * 1000 == want))
        })
    });
    q_ok && imdb_ok
        && num("tmdbid", item.tmdb_id)
        && num("tvdbid", item.tvdb_id)
        && num("season", item.season.map(u64::from))
        && num("ep", item.episode.map(u64::from))
        && cat_ok
}

async fn download(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(file): axum::extract::Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    if q.get("apikey") == Some(&s.key) {
        *s.keyed_downloads.lock().unwrap() += 1;
    } else if *s.downloads_need_key.lock().unwrap() {
        return (StatusCode::UNAUTHORIZED, "Invalid API key").into_response();
    }
    let number = file.strip_suffix(".torrent").and_then(|n| n.parse::<usize>().ok());
    match number.and_then(|n| s.files.lock().unwrap().get(&n).cloned()) {
        Some(bytes) => (StatusCode::OK, [("content-type", "application/x-bittorrent")], bytes).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn feed(title: &str, items: &[(usize, &Item)], base: &str) -> String {
    let mut out = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:torznab="http://torznab.com/schemas/2015/feed">
<channel>
"#,
    );
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    for &(n, item) in items {
        let guid = format!("https://indexer.example/details/{}", n + 1);
        let link = format!("{base}/download/{}.torrent", n + 1);
        let _ = write!(
            out,
            "<item>\n<title>{}</title>\n<guid>{guid}</guid>\n<comments>{guid}</comments>\n<pubDate>{}</pubDate>\n<size>{}</size>\n<link>{link}</link>\n<enclosure url=\"{link}\" length=\"{}\" type=\"application/x-bittorrent\"/>\n",
            escape(item.title),
            item.pub_date,
            item.size,
            item.size
        );
        let mut attr = |name: &str, value: String| {
            let _ = writeln!(out, r#"<torznab:attr name="{name}" value="{}"/>"#, escape(&value));
        };
        for category in item.categories {
            attr("category", category.to_string());
        }
        attr("size", item.size.to_string());
        attr("seeders", item.seeders.to_string());
        attr("peers", item.peers.to_string());
        if let Some(hash) = item.infohash {
            attr("infohash", hash.to_string());
        }
        if let Some(magnet) = item.magnet {
            attr("magneturl", magnet.to_string());
        }
        if let Some(imdb) = item.imdb_id {
            attr("imdbid", imdb.to_string());
        }
        if let Some(id) = item.tmdb_id {
            attr("tmdbid", id.to_string());
        }
        if let Some(id) = item.tvdb_id {
            attr("tvdbid", id.to_string());
        }
        if let Some(season) = item.season {
            attr("season", season.to_string());
        }
        if let Some(episode) = item.episode {
            attr("episode", episode.to_string());
        }
        attr("downloadvolumefactor", "1".into());
        attr("uploadvolumefactor", "1".into());
        out.push_str("</item>\n");
    }
    out.push_str("</channel>\n</rss>\n");
    out
}
