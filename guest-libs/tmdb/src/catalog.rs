//! The three actions: each sends the TMDB requests it needs and reshapes
//! the answers into [`crate::output`] types.

use capstan_sdk::Failure;

use crate::client::{self as tmdb, Subject, non_empty, year_of};
use crate::output::{Details, EpisodeOut, ExternalIdsOut, LookupOutput, NextEpisode, SearchHit, Season, SeasonOut};
use crate::{DEFAULT_LIMIT, MediaKind, SearchKind};

/// The original title only when it says something the title does not.
fn distinct(original: Option<String>, title: &str) -> Option<String> {
    non_empty(original).filter(|o| o != title)
}

fn movie_hit(m: tmdb::MovieHit) -> SearchHit {
    let date = non_empty(m.release_date);
    SearchHit {
        kind: MediaKind::Movie,
        tmdb_id: m.id,
        poster_path: non_empty(m.poster_path),
        original_title: distinct(m.original_title, &m.title),
        title: m.title,
        original_language: non_empty(m.original_language),
        year: year_of(date.as_deref()),
        date,
        origin_country: Vec::new(),
        overview: non_empty(m.overview),
        popularity: m.popularity,
    }
}

fn tv_hit(t: tmdb::TvHit) -> SearchHit {
    let date = non_empty(t.first_air_date);
    SearchHit {
        kind: MediaKind::Tv,
        tmdb_id: t.id,
        poster_path: non_empty(t.poster_path),
        original_title: distinct(t.original_name, &t.name),
        title: t.name,
        original_language: non_empty(t.original_language),
        year: year_of(date.as_deref()),
        date,
        origin_country: t.origin_country,
        overview: non_empty(t.overview),
        popularity: t.popularity,
    }
}

/// Searches the movie and/or series catalogue.
pub fn search(
    query: &str,
    kind: SearchKind,
    year: Option<u16>,
    language: Option<&str>,
    limit: Option<u8>,
) -> Result<LookupOutput, Failure> {
    let query = query.trim();
    let what = format!("the search for {query:?}");
    let subject = Subject { what: &what, missing_is_not_found: false };
    let mut params = vec![("query", query.to_string()), ("include_adult", "false".to_string())];
    if let Some(language) = language {
        params.push(("language", language.to_string()));
    }
    let mut results = Vec::new();
    let mut total_results = 0;
    if matches!(kind, SearchKind::Movie | SearchKind::Both) {
        let mut movie_params = params.clone();
        if let Some(year) = year {
            movie_params.push(("year", year.to_string()));
        }
        let page: tmdb::SearchPage<tmdb::MovieHit> = tmdb::get("/search/movie", &movie_params, &subject)?;
        total_results += page.total_results;
        results.extend(page.results.into_iter().map(movie_hit));
    }
    if matches!(kind, SearchKind::Tv | SearchKind::Both) {
        let mut tv_params = params;
        if let Some(year) = year {
            tv_params.push(("first_air_date_year", year.to_string()));
        }
        let page: tmdb::SearchPage<tmdb::TvHit> = tmdb::get("/search/tv", &tv_params, &subject)?;
        total_results += page.total_results;
        results.extend(page.results.into_iter().map(tv_hit));
    }
    if kind == SearchKind::Both {
        // Each catalogue comes back in TMDB's relevance order, but the two
        // orders are not comparable; popularity is the one score both share.
        results.sort_by(|a, b| b.popularity.total_cmp(&a.popularity));
    }
    results.truncate(usize::from(limit.unwrap_or(DEFAULT_LIMIT)));
    Ok(LookupOutput::Search { results, total_results })
}

/// Details of one movie or series.
pub fn details(kind: MediaKind, tmdb_id: u64, language: Option<&str>) -> Result<LookupOutput, Failure> {
    let what = format!("{} with TMDB id {tmdb_id}", kind.noun());
    let subject = Subject { what: &what, missing_is_not_found: true };
    let params: Vec<(&str, String)> = language.map(|l| ("language", l.to_string())).into_iter().collect();
    let path = format!("/{}/{tmdb_id}", kind.path_segment());
    let details = match kind {
        MediaKind::Movie => movie_details(tmdb::get(&path, &params, &subject)?),
        MediaKind::Tv => tv_details(tmdb::get(&path, &params, &subject)?),
    };
    Ok(LookupOutput::Details(Box::new(details)))
}

fn movie_details(m: tmdb::MovieDetails) -> Details {
    let date = non_empty(m.release_date);
    Details {
        kind: MediaKind::Movie,
        tmdb_id: m.id,
        poster_path: non_empty(m.poster_path),
        original_title: distinct(m.original_title, &m.title),
        title: m.title,
        original_language: non_empty(m.original_language),
        year: year_of(date.as_deref()),
        date,
        overview: non_empty(m.overview),
        genres: m.genres.into_iter().map(|g| g.name).collect(),
        // TMDB reports 0 for a runtime it does not know.
        runtime_minutes: m.runtime.filter(|r| *r > 0),
        status: non_empty(m.status),
        imdb_id: non_empty(m.imdb_id),
        collection: m.belongs_to_collection.map(|c| c.name),
        last_air_date: None,
        number_of_seasons: None,
        number_of_episodes: None,
        seasons: Vec::new(),
        next_episode: None,
    }
}

fn tv_details(t: tmdb::TvDetails) -> Details {
    let date = non_empty(t.first_air_date);
    Details {
        kind: MediaKind::Tv,
        tmdb_id: t.id,
        poster_path: non_empty(t.poster_path),
        original_title: distinct(t.original_name, &t.name),
        title: t.name,
        original_language: non_empty(t.original_language),
        year: year_of(date.as_deref()),
        date,
        overview: non_empty(t.overview),
        genres: t.genres.into_iter().map(|g| g.name).collect(),
        runtime_minutes: t.episode_run_time.first().copied().filter(|r| *r > 0),
        status: non_empty(t.status),
        imdb_id: None,
        collection: None,
        last_air_date: non_empty(t.last_air_date),
        number_of_seasons: t.number_of_seasons,
        number_of_episodes: t.number_of_episodes,
        seasons: t
            .seasons
            .into_iter()
            .map(|s| Season {
                season_number: s.season_number,
                name: non_empty(s.name),
                episode_count: s.episode_count,
                air_date: non_empty(s.air_date),
            })
            .collect(),
        next_episode: t.next_episode_to_air.map(|e| NextEpisode {
            season_number: e.season_number,
            episode_number: e.episode_number,
            air_date: non_empty(e.air_date),
            name: non_empty(e.name),
        }),
    }
}

/// IMDb and TVDB ids of one movie or series.
pub fn external_ids(kind: MediaKind, tmdb_id: u64) -> Result<LookupOutput, Failure> {
    let what = format!("{} with TMDB id {tmdb_id}", kind.noun());
    let subject = Subject { what: &what, missing_is_not_found: true };
    let path = format!("/{}/{tmdb_id}/external_ids", kind.path_segment());
    let ids: tmdb::ExternalIds = tmdb::get(&path, &[], &subject)?;
    Ok(LookupOutput::ExternalIds(ExternalIdsOut {
        kind,
        tmdb_id,
        imdb_id: non_empty(ids.imdb_id),
        tvdb_id: ids.tvdb_id.filter(|id| *id > 0),
    }))
}

/// Most episodes one season may list: long-running daily shows reach a few
/// hundred; anything past this is not a season a library can fetch.
pub const MAX_EPISODES: usize = 2_000;

/// One season of a series with its episodes (TMDB's `/tv/{id}/season/{n}`).
pub fn season(tmdb_id: u64, season_number: u32, language: Option<&str>) -> Result<SeasonOut, Failure> {
    let what = format!("season {season_number} of the series with TMDB id {tmdb_id}");
    let subject = Subject { what: &what, missing_is_not_found: true };
    let params: Vec<(&str, String)> = language.map(|l| ("language", l.to_string())).into_iter().collect();
    let path = format!("/tv/{tmdb_id}/season/{season_number}");
    let s: tmdb::SeasonDetails = tmdb::get(&path, &params, &subject)?;
    if s.season_number != season_number {
        return Err(Failure::Unavailable(format!("TMDB answered season {} when asked for {what}", s.season_number)));
    }
    if s.episodes.len() > MAX_EPISODES {
        return Err(Failure::Unavailable(format!(
            "TMDB lists {} episodes for {what}, more than the {MAX_EPISODES} a season may have",
            s.episodes.len()
        )));
    }
    let mut episodes: Vec<EpisodeOut> = s
        .episodes
        .into_iter()
        .map(|e| EpisodeOut {
            episode_number: e.episode_number,
            name: non_empty(e.name),
            air_date: non_empty(e.air_date),
            runtime_minutes: e.runtime.filter(|r| *r > 0),
        })
        .collect();
    // TMDB lists them in order; an answer that repeats a number keeps the first.
    episodes.sort_by_key(|e| e.episode_number);
    episodes.dedup_by_key(|e| e.episode_number);
    Ok(SeasonOut { tmdb_id, season_number, name: non_empty(s.name), air_date: non_empty(s.air_date), episodes })
}
