//! What `catalog.lookup` answers: the same shapes for movies and series, so
//! a caller reads `title`, `year` and `tmdb_id` without caring which it got.

use serde::Serialize;

use crate::MediaKind;

/// The answer, tagged with the action that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum LookupOutput {
    Search {
        /// Matches, best first.
        results: Vec<SearchHit>,
        /// How many matches TMDB has in all, over every page and catalogue
        /// searched; more than `results` means the query could be narrower.
        total_results: u64,
    },
    Details(Box<Details>),
    ExternalIds(ExternalIdsOut),
    Season(SeasonOut),
}

/// One search match.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SearchHit {
    pub kind: MediaKind,
    pub tmdb_id: u64,
    /// The title in the requested language.
    pub title: String,
    /// The title in its original language, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_language: Option<String>,
    /// Release year (movies) or first-air year (series).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<u16>,
    /// Release date (movies) or first-air date (series), `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Production countries of a series, e.g. `["US"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origin_country: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview: Option<String>,
    /// The poster, below TMDB's image base URL
    /// (`https://image.tmdb.org/t/p/w185` + this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poster_path: Option<String>,
    /// TMDB's popularity score; higher is more popular.
    pub popularity: f64,
}

/// Details of one movie or series.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Details {
    pub kind: MediaKind,
    pub tmdb_id: u64,
    pub title: String,
    /// The poster, below TMDB's image base URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poster_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_language: Option<String>,
    /// Release year (movies) or first-air year (series).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<u16>,
    /// Release date (movies) or first-air date (series), `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview: Option<String>,
    /// Genre names, e.g. `["Science Fiction", "Adventure"]`.
    pub genres: Vec<String>,
    /// Running time in minutes (for a series, a typical episode's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_minutes: Option<u32>,
    /// TMDB's status: `Released`, `Returning Series`, `Ended`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// IMDb id (`tt...`); movie details carry it, for series use
    /// `external-ids`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imdb_id: Option<String>,
    /// The collection a movie belongs to, e.g. `Dune Collection`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// Date of a series' latest episode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_air_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_seasons: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_episodes: Option<u32>,
    /// A series' seasons in order; season 0 holds the specials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seasons: Vec<Season>,
    /// The next episode TMDB expects to air, for a running series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_episode: Option<NextEpisode>,
}

/// One season of a series.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Season {
    /// 0 for specials.
    pub season_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub air_date: Option<String>,
}

/// The next episode to air.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NextEpisode {
    pub season_number: u32,
    pub episode_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub air_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Ids of the same title in other catalogues.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExternalIdsOut {
    pub kind: MediaKind,
    pub tmdb_id: u64,
    /// IMDb id, `tt` followed by digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imdb_id: Option<String>,
    /// TheTVDB id; TMDB keeps these for series only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tvdb_id: Option<u64>,
}

/// One season of a series with its episodes, in episode order.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SeasonOut {
    pub tmdb_id: u64,
    /// 0 for specials.
    pub season_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub air_date: Option<String>,
    pub episodes: Vec<EpisodeOut>,
}

/// One episode.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EpisodeOut {
    pub episode_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `YYYY-MM-DD`; absent while TMDB does not know when it airs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub air_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_minutes: Option<u32>,
}
