//! TMDB v3 over the host's `outbound-read`: the wire shapes we read, and the
//! translation of TMDB's answers (and the host's refusals) into failures a
//! user can act on. The credential is injected by the host; nothing here
//! ever sees it.

use capstan_sdk::host::{self, Request, Response};
use capstan_sdk::{Failure, HostError};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The outbound service name the operator configures (`[services.tmdb]`,
/// with the API version in its base URL: `https://api.themoviedb.org/3`).
pub const SERVICE: &str = "tmdb";

/// What a TMDB GET is about, so failures can name it.
pub struct Subject<'a> {
    /// `movie 693134`, `search for "Dune"`.
    pub what: &'a str,
    /// Whether a 404 means the thing asked for does not exist (a details
    /// call) rather than TMDB misbehaving (a search).
    pub missing_is_not_found: bool,
}

/// GETs `path` with `query` and decodes the JSON body as `T`.
pub fn get<T: DeserializeOwned>(path: &str, query: &[(&str, String)], subject: &Subject<'_>) -> Result<T, Failure> {
    let mut req = Request::get(SERVICE, path);
    for (name, value) in query {
        req = req.query(name, value.clone());
    }
    let resp = host::outbound::read(req).map_err(host_failure)?;
    check_status(&resp, subject)?;
    serde_json::from_slice(&resp.body).map_err(|e| {
        Failure::Unavailable(format!("TMDB answered {} with a body that is not the expected JSON ({e})", subject.what))
    })
}

/// The host's refusal, said in TMDB terms. An unconfigured service is the
/// operator's to fix, not a missing title, so it is `unavailable`.
fn host_failure(err: HostError) -> Failure {
    match err {
        HostError::NotFound(m) => {
            Failure::Unavailable(format!("TMDB is not set up: {m}; the operator must add [services.{SERVICE}]"))
        }
        HostError::Unavailable(m) => Failure::Unavailable(format!("TMDB could not be reached: {m}")),
        HostError::TooLarge(m) => Failure::Unavailable(format!("TMDB answered too much: {m}")),
        other => Failure::from(other),
    }
}

/// TMDB's error body: `{success: false, status_code, status_message}`.
#[derive(Debug, Deserialize)]
struct TmdbError {
    #[serde(default)]
    status_code: Option<i64>,
    #[serde(default)]
    status_message: Option<String>,
}

fn tmdb_says(resp: &Response) -> String {
    match serde_json::from_slice::<TmdbError>(&resp.body) {
        Ok(TmdbError { status_message: Some(message), status_code }) => match status_code {
            Some(code) => format!(" (TMDB code {code}: {message})"),
            None => format!(" ({message})"),
        },
        _ => String::new(),
    }
}

fn header<'a>(resp: &'a Response, name: &str) -> Option<&'a str> {
    resp.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
}

/// Maps a non-success status to the failure a user needs to see.
fn check_status(resp: &Response, subject: &Subject<'_>) -> Result<(), Failure> {
    let what = subject.what;
    match resp.status {
        200..=299 => Ok(()),
        401 => Err(Failure::Unavailable(format!(
            "TMDB refused the configured credential{}; the operator must fix the key in [services.{SERVICE}]",
            tmdb_says(resp)
        ))),
        404 if subject.missing_is_not_found => Err(Failure::NotFound(format!("TMDB has no {what}"))),
        429 => {
            let wait = match header(resp, "retry-after") {
                Some(seconds) => format!("; retry after {seconds} s"),
                None => "; retry later".into(),
            };
            Err(Failure::Unavailable(format!("TMDB rate-limited the lookup of {what}{wait}")))
        }
        400 | 422 => Err(Failure::InvalidInput(format!("TMDB rejected the lookup of {what}{}", tmdb_says(resp)))),
        status if status >= 500 => {
            Err(Failure::Unavailable(format!("TMDB failed with status {status} on {what}; try again later")))
        }
        status => Err(Failure::Unavailable(format!("TMDB answered status {status} on {what}{}", tmdb_says(resp)))),
    }
}

/// `GET /search/movie` and `/search/tv`: one page of results.
#[derive(Debug, Deserialize)]
pub struct SearchPage<T> {
    #[serde(default = "Vec::new")]
    pub results: Vec<T>,
    #[serde(default)]
    pub total_results: u64,
}

/// One hit of `search/movie`.
#[derive(Debug, Deserialize)]
pub struct MovieHit {
    pub id: u64,
    /// `/abc.jpg`, below TMDB's image base URL.
    #[serde(default)]
    pub poster_path: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub original_title: Option<String>,
    #[serde(default)]
    pub original_language: Option<String>,
    /// `YYYY-MM-DD`, or an empty string when TMDB does not know.
    #[serde(default)]
    pub release_date: Option<String>,
    #[serde(default)]
    pub overview: Option<String>,
    #[serde(default)]
    pub popularity: f64,
}

/// One hit of `search/tv`.
#[derive(Debug, Deserialize)]
pub struct TvHit {
    pub id: u64,
    /// `/abc.jpg`, below TMDB's image base URL.
    #[serde(default)]
    pub poster_path: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub original_name: Option<String>,
    #[serde(default)]
    pub original_language: Option<String>,
    #[serde(default)]
    pub first_air_date: Option<String>,
    #[serde(default)]
    pub origin_country: Vec<String>,
    #[serde(default)]
    pub overview: Option<String>,
    #[serde(default)]
    pub popularity: f64,
}

/// `{id, name}` as TMDB lists genres.
#[derive(Debug, Deserialize)]
pub struct Genre {
    pub name: String,
}

/// `GET /movie/{id}`.
#[derive(Debug, Deserialize)]
pub struct MovieDetails {
    pub id: u64,
    /// `/abc.jpg`, below TMDB's image base URL.
    #[serde(default)]
    pub poster_path: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub original_title: Option<String>,
    #[serde(default)]
    pub original_language: Option<String>,
    #[serde(default)]
    pub release_date: Option<String>,
    #[serde(default)]
    pub overview: Option<String>,
    #[serde(default)]
    pub runtime: Option<u32>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub genres: Vec<Genre>,
    #[serde(default)]
    pub imdb_id: Option<String>,
    #[serde(default)]
    pub belongs_to_collection: Option<Collection>,
}

/// The collection a movie belongs to (`Dune Collection`).
#[derive(Debug, Deserialize)]
pub struct Collection {
    pub name: String,
}

/// `GET /tv/{id}`.
#[derive(Debug, Deserialize)]
pub struct TvDetails {
    pub id: u64,
    /// `/abc.jpg`, below TMDB's image base URL.
    #[serde(default)]
    pub poster_path: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub original_name: Option<String>,
    #[serde(default)]
    pub original_language: Option<String>,
    #[serde(default)]
    pub first_air_date: Option<String>,
    #[serde(default)]
    pub last_air_date: Option<String>,
    #[serde(default)]
    pub overview: Option<String>,
    #[serde(default)]
    pub episode_run_time: Vec<u32>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub genres: Vec<Genre>,
    #[serde(default)]
    pub number_of_seasons: Option<u32>,
    #[serde(default)]
    pub number_of_episodes: Option<u32>,
    #[serde(default)]
    pub seasons: Vec<TvSeason>,
    #[serde(default)]
    pub next_episode_to_air: Option<TvEpisode>,
}

/// One entry of a series' `seasons`.
#[derive(Debug, Deserialize)]
pub struct TvSeason {
    pub season_number: u32,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub episode_count: Option<u32>,
    #[serde(default)]
    pub air_date: Option<String>,
}

/// `next_episode_to_air`.
#[derive(Debug, Deserialize)]
pub struct TvEpisode {
    pub season_number: u32,
    pub episode_number: u32,
    #[serde(default)]
    pub air_date: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// `GET /tv/{id}/season/{n}`: one season with its episodes.
#[derive(Debug, Deserialize)]
pub struct SeasonDetails {
    pub season_number: u32,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub air_date: Option<String>,
    #[serde(default)]
    pub episodes: Vec<SeasonEpisode>,
}

/// One entry of a season's `episodes`.
#[derive(Debug, Deserialize)]
pub struct SeasonEpisode {
    pub episode_number: u32,
    #[serde(default)]
    pub name: Option<String>,
    /// `YYYY-MM-DD`; empty or null while TMDB does not know it.
    #[serde(default)]
    pub air_date: Option<String>,
    #[serde(default)]
    pub runtime: Option<u32>,
}

/// `GET /{movie|tv}/{id}/external_ids`. TVDB ids exist only for series.
#[derive(Debug, Deserialize)]
pub struct ExternalIds {
    #[serde(default)]
    pub imdb_id: Option<String>,
    #[serde(default)]
    pub tvdb_id: Option<u64>,
}

/// TMDB writes "no date" as `""` and "no IMDb id" as `""` or null; both
/// become `None`.
pub fn non_empty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// The year of a `YYYY-MM-DD` date.
pub fn year_of(date: Option<&str>) -> Option<u16> {
    date.and_then(|d| d.get(..4)).and_then(|y| y.parse().ok())
}
