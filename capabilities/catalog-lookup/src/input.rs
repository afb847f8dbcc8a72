//! What a caller may ask `catalog.lookup`, and the checks that turn a
//! malformed request into `invalid-input` before anything is sent to TMDB.

use capstan_sdk::Failure;
pub use capstan_tmdb::{DEFAULT_LIMIT, MAX_LIMIT, MediaKind, SearchKind};
use serde::Deserialize;

/// One lookup. `action` says which.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LookupInput {
    /// Finds movies and/or series by title.
    Search {
        /// Title words to search for, e.g. `Dune` or `沙丘`.
        query: String,
        /// `movie`, `tv` or `both` (default).
        #[serde(default)]
        kind: SearchKind,
        /// Only titles released (movies) or first aired (series) in this year.
        #[serde(default)]
        year: Option<u16>,
        /// TMDB language for titles and overviews, e.g. `en-US` or `zh-CN`.
        /// Default: TMDB's own (English).
        #[serde(default)]
        language: Option<String>,
        /// Most results to return, 1 to 20 (default 10). With `both`, the
        /// limit applies to the merged list.
        #[serde(default)]
        limit: Option<u8>,
    },
    /// Full details of one movie or series.
    Details {
        /// `movie` or `tv`.
        kind: MediaKind,
        /// The TMDB id, as returned by `search`.
        tmdb_id: u64,
        /// TMDB language for the title and overview, e.g. `zh-CN`.
        #[serde(default)]
        language: Option<String>,
    },
    /// One season of a series with its episodes: numbers, titles, air dates.
    Season {
        /// The series' TMDB id, as returned by `search`.
        tmdb_id: u64,
        /// The season number as `details` lists it; 0 holds the specials.
        season: u32,
        /// TMDB language for the episode titles, e.g. `zh-CN`.
        #[serde(default)]
        language: Option<String>,
    },
    /// The IMDb and TVDB ids TMDB knows for one movie or series.
    ExternalIds {
        /// `movie` or `tv`.
        kind: MediaKind,
        /// The TMDB id, as returned by `search`.
        tmdb_id: u64,
    },
}

impl LookupInput {
    /// Refuses requests TMDB would answer with nonsense or an error.
    pub fn validate(&self) -> Result<(), Failure> {
        let bad = |m: String| Err(Failure::InvalidInput(m));
        match self {
            LookupInput::Search { query, year, language, limit, .. } => {
                let query = query.trim();
                if query.is_empty() {
                    return bad("query must not be empty".into());
                }
                if query.chars().count() > 200 {
                    return bad("query is longer than 200 characters".into());
                }
                if let Some(year) = year
                    && !(1870..=2200).contains(year)
                {
                    return bad(format!("year {year} is not a plausible release year"));
                }
                if let Some(limit) = limit
                    && !(1..=MAX_LIMIT).contains(limit)
                {
                    return bad(format!("limit must be between 1 and {MAX_LIMIT}, not {limit}"));
                }
                check_language(language.as_deref())
            }
            LookupInput::Details { tmdb_id, language, .. } => {
                check_id(*tmdb_id)?;
                check_language(language.as_deref())
            }
            LookupInput::Season { tmdb_id, season, language } => {
                check_id(*tmdb_id)?;
                if *season > MAX_SEASON {
                    return bad(format!("season {season} is past the {MAX_SEASON} a series may have"));
                }
                check_language(language.as_deref())
            }
            LookupInput::ExternalIds { tmdb_id, .. } => check_id(*tmdb_id),
        }
    }
}

/// The highest season number a lookup asks for; long-running daily shows
/// number seasons by year, which stays well below it.
pub const MAX_SEASON: u32 = 9_999;

fn check_id(id: u64) -> Result<(), Failure> {
    if id == 0 {
        return Err(Failure::InvalidInput("tmdb_id must be a positive TMDB id".into()));
    }
    Ok(())
}

/// Accepts ISO 639-1 codes with an optional region: `en`, `zh-CN`, `pt-BR`.
fn check_language(language: Option<&str>) -> Result<(), Failure> {
    let Some(language) = language else { return Ok(()) };
    let mut parts = language.split('-');
    let lang_ok = parts.next().is_some_and(|l| l.len() == 2 && l.chars().all(|c| c.is_ascii_lowercase()));
    let region_ok = match parts.next() {
        None => true,
        Some(r) => r.len() == 2 && r.chars().all(|c| c.is_ascii_uppercase()),
    };
    if lang_ok && region_ok && parts.next().is_none() {
        Ok(())
    } else {
        Err(Failure::InvalidInput(format!("language {language:?} is not a code like en-US or zh-CN")))
    }
}
