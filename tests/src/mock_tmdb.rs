//! A TMDB v3 server on loopback speaking the real shapes: `search/movie`,
//! `search/tv`, `movie/{id}`, `tv/{id}`, `tv/{id}/season/{n}` and their
//! `external_ids`, with
//! `api_key` query or bearer-token auth and TMDB's JSON error bodies. Tests
//! switch it into a failure mode (refused key, rate limit, server error,
//! malformed body) and read back every request it received.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

/// A movie in the mock catalogue.
#[derive(Debug, Clone)]
pub struct Movie {
    pub id: u64,
    pub title: &'static str,
    pub original_title: &'static str,
    /// `YYYY-MM-DD` or `""` (TMDB's "unknown").
    pub release_date: &'static str,
    pub runtime: u32,
    pub genres: &'static [&'static str],
    pub imdb_id: &'static str,
    pub collection: Option<&'static str>,
    pub popularity: f64,
}

/// A series in the mock catalogue.
#[derive(Debug, Clone)]
pub struct Series {
    pub id: u64,
    pub name: &'static str,
    pub original_name: &'static str,
    pub first_air_date: &'static str,
    pub last_air_date: &'static str,
    /// (season number, episode count); season 0 holds specials.
    pub seasons: &'static [(u32, u32)],
    /// Episodes with their own title and air date, as (season, episode,
    /// title, `YYYY-MM-DD` or `""` for "not known yet"); every other
    /// episode of a listed season is `Episode N`, aired on the first air date.
    pub episodes: &'static [(u32, u32, &'static str, &'static str)],
    pub genres: &'static [&'static str],
    pub imdb_id: &'static str,
    pub tvdb_id: u64,
    pub popularity: f64,
}

/// The catalogue the server answers from.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub movies: Vec<Movie>,
    pub series: Vec<Series>,
}

impl Catalog {
    /// A few well-known titles: two Dune movies, a Dune series, Shōgun.
    pub fn sample() -> Catalog {
        Catalog {
            movies: vec![
                Movie {
                    id: 438631,
                    title: "Dune",
                    original_title: "Dune",
                    release_date: "2021-09-15",
                    runtime: 155,
                    genres: &["Science Fiction", "Adventure"],
                    imdb_id: "tt1160419",
                    collection: Some("Dune Collection"),
                    popularity: 110.0,
                },
                Movie {
                    id: 693134,
                    title: "Dune: Part Two",
                    original_title: "Dune: Part Two",
                    release_date: "2024-02-27",
                    runtime: 167,
                    genres: &["Science Fiction", "Adventure"],
                    imdb_id: "tt15239678",
                    collection: Some("Dune Collection"),
                    popularity: 150.0,
                },
            ],
            series: vec![
                Series {
                    id: 90228,
                    name: "Dune: Prophecy",
                    original_name: "Dune: Prophecy",
                    first_air_date: "2024-11-17",
                    last_air_date: "2024-12-22",
                    seasons: &[(1, 6)],
                    episodes: &[],
                    genres: &["Sci-Fi & Fantasy", "Drama"],
                    imdb_id: "tt10466872",
                    tvdb_id: 355567,
                    popularity: 130.0,
                },
                Series {
                    id: 126308,
                    name: "Shōgun",
                    original_name: "SHOGUN",
                    first_air_date: "2024-02-27",
                    last_air_date: "2024-04-23",
                    seasons: &[(0, 1), (1, 10)],
                    episodes: &[
                        (1, 1, "Anjin", "2024-02-27"),
                        (1, 2, "Servants of Two Masters", "2024-02-27"),
                        (1, 3, "Tomorrow Is Tomorrow", "2024-03-05"),
                        (1, 4, "The Eightfold Fence", "2024-03-12"),
                        (1, 5, "Broken to the Fist", "2024-03-19"),
                        (1, 6, "Ladies of the Willow World", "2024-03-26"),
                        (1, 7, "A Stick of Time", "2024-04-02"),
                        (1, 8, "The Abyss of Life", "2024-04-09"),
                        (1, 9, "Crimson Sky", "2024-04-16"),
                        (1, 10, "A Dream of a Dream", "2024-04-23"),
                    ],
                    genres: &["Drama", "War & Politics"],
                    imdb_id: "tt2788316",
                    tvdb_id: 392573,
                    popularity: 90.0,
                },
            ],
        }
    }
}

/// A way the server can be told to fail every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 401 with TMDB's code 7 even for the right key, as for a revoked one.
    RevokedKey,
    /// 429 with `Retry-After`.
    RateLimited { retry_after_secs: u32 },
    /// 503 with an HTML body, as a proxy in front of TMDB would answer.
    ServerError,
    /// 200 with a body cut off mid-JSON.
    Malformed,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub authorization: Option<String>,
}

struct Shared {
    key: String,
    catalog: Catalog,
    failure: Mutex<Option<Failure>>,
    received: Mutex<Vec<Received>>,
}

/// A running mock TMDB.
pub struct MockTmdb {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockTmdb {
    /// Starts the server on 127.0.0.1 with a free port; requests must carry
    /// `key` as `api_key` or as a bearer token.
    pub async fn start(key: &str, catalog: Catalog) -> MockTmdb {
        let shared = Arc::new(Shared {
            key: key.to_string(),
            catalog,
            failure: Mutex::new(None),
            received: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/3/search/movie", get(search_movie))
            .route("/3/search/tv", get(search_tv))
            .route("/3/movie/{id}", get(movie))
            .route("/3/tv/{id}", get(series))
            .route("/3/tv/{id}/season/{season}", get(season))
            .route("/3/movie/{id}/external_ids", get(movie_ids))
            .route("/3/tv/{id}/external_ids", get(series_ids))
            .route("/3/configuration", get(configuration))
            .with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
        MockTmdb { addr, shared }
    }

    /// The base URL to configure: like TMDB's own, it ends in the API
    /// version `/3`, and components append `/search/movie` and the like.
    pub fn base_url(&self) -> String {
        format!("http://{}/3", self.addr)
    }

    /// Makes every later request fail this way; `None` recovers.
    pub fn fail_with(&self, failure: Option<Failure>) {
        *self.shared.failure.lock().unwrap() = failure;
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

fn tmdb_error(status: StatusCode, code: u32, message: &str) -> Response {
    (status, Json(json!({"success": false, "status_code": code, "status_message": message}))).into_response()
}

/// Records the request, then applies auth and the failure mode: `Some` is
/// the answer to send instead of the real one.
fn refusal(shared: &Shared, uri: &Uri, query: &BTreeMap<String, String>, headers: &HeaderMap) -> Option<Response> {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    shared.received.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        query: query.clone(),
        authorization: authorization.clone(),
    });
    let bearer_ok = authorization.as_deref().and_then(|a| a.strip_prefix("Bearer ")) == Some(shared.key.as_str());
    let query_ok = query.get("api_key") == Some(&shared.key);
    if !bearer_ok && !query_ok {
        return Some(tmdb_error(StatusCode::UNAUTHORIZED, 7, "Invalid API key: You must be granted a valid key."));
    }
    match *shared.failure.lock().unwrap() {
        None => None,
        Some(Failure::RevokedKey) => {
            Some(tmdb_error(StatusCode::UNAUTHORIZED, 7, "Invalid API key: You must be granted a valid key."))
        }
        Some(Failure::RateLimited { retry_after_secs }) => Some((
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry_after_secs.to_string())],
            Json(json!({"success": false, "status_code": 25, "status_message": "Your request count (41) is over the allowed limit of 40."})),
        )
            .into_response()),
        Some(Failure::ServerError) => {
            Some((StatusCode::SERVICE_UNAVAILABLE, "<html><body>503 Service Unavailable</body></html>").into_response())
        }
        Some(Failure::Malformed) => Some((StatusCode::OK, [("content-type", "application/json")], r#"{"page":1,"results":[{"id":"#).into_response()),
    }
}

fn not_found() -> Response {
    tmdb_error(StatusCode::NOT_FOUND, 34, "The resource you requested could not be found.")
}

fn matches(query: &BTreeMap<String, String>, titles: [&str; 2]) -> bool {
    let wanted = query.get("query").map(|q| q.to_lowercase()).unwrap_or_default();
    !wanted.is_empty() && titles.iter().any(|t| t.to_lowercase().contains(&wanted))
}

fn page(results: Vec<Value>) -> Response {
    let total = results.len();
    Json(json!({"page": 1, "results": results, "total_pages": 1, "total_results": total})).into_response()
}

type Params = Query<BTreeMap<String, String>>;

async fn search_movie(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let year = q.get("year").or(q.get("primary_release_year"));
    let hits = s
        .catalog
        .movies
        .iter()
        .filter(|m| matches(&q, [m.title, m.original_title]))
        .filter(|m| year.is_none_or(|y| m.release_date.starts_with(y.as_str())))
        .map(|m| {
            json!({"id": m.id, "title": m.title, "original_title": m.original_title, "release_date": m.release_date,
                "original_language": "en", "genre_ids": [878], "popularity": m.popularity, "poster_path": format!("/poster-{}.jpg", m.id),
                "overview": format!("{} overview.", m.title), "adult": false, "video": false})
        })
        .collect();
    page(hits)
}

async fn search_tv(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let year = q.get("first_air_date_year");
    let hits = s
        .catalog
        .series
        .iter()
        .filter(|t| matches(&q, [t.name, t.original_name]))
        .filter(|t| year.is_none_or(|y| t.first_air_date.starts_with(y.as_str())))
        .map(|t| {
            json!({"id": t.id, "name": t.name, "original_name": t.original_name, "first_air_date": t.first_air_date,
                "origin_country": ["US"], "original_language": "en", "popularity": t.popularity, "poster_path": format!("/poster-{}.jpg", t.id),
                "overview": format!("{} overview.", t.name), "genre_ids": [18]})
        })
        .collect();
    page(hits)
}

fn genres(names: &[&str]) -> Vec<Value> {
    names.iter().enumerate().map(|(i, n)| json!({"id": 100 + i, "name": n})).collect()
}

async fn movie(
    State(s): State<Arc<Shared>>,
    Path(id): Path<u64>,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let Some(m) = s.catalog.movies.iter().find(|m| m.id == id) else { return not_found() };
    Json(json!({"id": m.id, "imdb_id": m.imdb_id, "title": m.title, "original_title": m.original_title,
        "original_language": "en", "release_date": m.release_date, "runtime": m.runtime, "status": "Released",
        "overview": format!("{} overview.", m.title), "genres": genres(m.genres),
        "belongs_to_collection": m.collection.map(|c| json!({"id": 726871, "name": c})), "adult": false}))
    .into_response()
}

async fn series(
    State(s): State<Arc<Shared>>,
    Path(id): Path<u64>,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let Some(t) = s.catalog.series.iter().find(|t| t.id == id) else { return not_found() };
    let seasons: Vec<Value> = t
        .seasons
        .iter()
        .map(|(n, count)| {
            let name = if *n == 0 { "Specials".to_string() } else { format!("Season {n}") };
            json!({"season_number": n, "episode_count": count, "name": name, "air_date": t.first_air_date, "id": id * 10 + u64::from(*n)})
        })
        .collect();
    let regular = t.seasons.iter().filter(|(n, _)| *n > 0);
    Json(json!({"id": t.id, "name": t.name, "original_name": t.original_name, "original_language": "en",
        "first_air_date": t.first_air_date, "last_air_date": t.last_air_date, "status": "Returning Series",
        "number_of_seasons": regular.clone().count(), "number_of_episodes": regular.map(|(_, c)| c).sum::<u32>(),
        "episode_run_time": [55], "genres": genres(t.genres), "seasons": seasons,
        "overview": format!("{} overview.", t.name), "next_episode_to_air": null, "in_production": true}))
    .into_response()
}

async fn season(
    State(s): State<Arc<Shared>>,
    Path((id, number)): Path<(u64, u32)>,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let Some(t) = s.catalog.series.iter().find(|t| t.id == id) else { return not_found() };
    let Some((_, count)) = t.seasons.iter().find(|(n, _)| *n == number) else { return not_found() };
    let episodes: Vec<Value> = (1..=*count)
        .map(|e| {
            let (title, air_date) = match t.episodes.iter().find(|(sn, en, _, _)| *sn == number && *en == e) {
                Some((_, _, title, date)) => (title.to_string(), date.to_string()),
                None => (format!("Episode {e}"), t.first_air_date.to_string()),
            };
            json!({"air_date": air_date, "episode_number": e, "episode_type": "standard", "id": id * 1000 + u64::from(e),
                "name": title, "overview": "", "production_code": "", "runtime": 55, "season_number": number,
                "show_id": id, "still_path": null, "vote_average": 0.0, "vote_count": 0, "crew": [], "guest_stars": []})
        })
        .collect();
    let name = if number == 0 { "Specials".to_string() } else { format!("Season {number}") };
    Json(json!({"_id": format!("{id}-{number}"), "air_date": t.first_air_date, "episodes": episodes, "name": name,
        "overview": "", "id": id * 10 + u64::from(number), "poster_path": null, "season_number": number, "vote_average": 0.0}))
    .into_response()
}

async fn configuration(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    Json(json!({"images": {"base_url": "http://image.tmdb.org/t/p/", "secure_base_url": "https://image.tmdb.org/t/p/",
        "poster_sizes": ["w92", "w185", "original"]}, "change_keys": []}))
    .into_response()
}

async fn movie_ids(
    State(s): State<Arc<Shared>>,
    Path(id): Path<u64>,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let Some(m) = s.catalog.movies.iter().find(|m| m.id == id) else { return not_found() };
    Json(json!({"id": m.id, "imdb_id": m.imdb_id, "wikidata_id": null, "facebook_id": null})).into_response()
}

async fn series_ids(
    State(s): State<Arc<Shared>>,
    Path(id): Path<u64>,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    if let Some(answer) = refusal(&s, &uri, &q, &headers) {
        return answer;
    }
    let Some(t) = s.catalog.series.iter().find(|t| t.id == id) else { return not_found() };
    Json(json!({"id": t.id, "imdb_id": t.imdb_id, "tvdb_id": t.tvdb_id, "tvrage_id": null, "wikidata_id": null}))
        .into_response()
}
