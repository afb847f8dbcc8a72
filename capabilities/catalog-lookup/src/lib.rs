//! Capability `catalog.lookup` (label read): asks TMDB, through the
//! operator-configured `tmdb` service, what a movie or series is — search by
//! title, details by TMDB id, and the IMDb/TVDB ids other tools key on.
//!
//! [`input`] owns the request and its checks; the TMDB client, the
//! requests each action sends and the answers are the `capstan-tmdb` guest
//! library's. The host injects the TMDB credential; this component never
//! sees it.

pub mod input;

pub use capstan_tmdb::{catalog as actions, client as tmdb, output};

#[cfg(test)]
mod tests;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};

use input::LookupInput;
use output::LookupOutput;

/// The capability.
pub struct CatalogLookup;

impl Capability for CatalogLookup {
    type Input = LookupInput;
    type Output = LookupOutput;

    const META: Meta = Meta {
        id: "catalog.lookup",
        version: 1,
        label: Label::Read,
        summary: "Look up movies and series on TMDB: search by title, details, IMDb/TVDB ids",
        description: "Searches TMDB's movie and/or series catalogue by title (optionally a year), returns the details of one title by TMDB id (title, original title, year, overview, genres, runtime, and for series the seasons and next episode), one season's episodes (numbers, titles, air dates), or the IMDb and TVDB ids of a title. Use it to confirm what a release or a request refers to before searching indexers.",
        tags: &["catalog", "tmdb", "metadata", "search", "movie", "tv"],
        aliases: &[
            "look up",
            "search movie",
            "search series",
            "movie info",
            "find title",
            "imdb id",
            "查询",
            "搜索电影",
            "搜索剧集",
            "影片信息",
            "电影信息",
            "剧集信息",
        ],
        replay: Replay::Safe,
        services: &[tmdb::SERVICE],
    };

    fn invoke(input: LookupInput) -> Result<Outcome<LookupOutput>, Failure> {
        input.validate()?;
        let output = match input {
            LookupInput::Search { query, kind, year, language, limit } => {
                actions::search(&query, kind, year, language.as_deref(), limit)?
            }
            LookupInput::Details { kind, tmdb_id, language } => actions::details(kind, tmdb_id, language.as_deref())?,
            LookupInput::Season { tmdb_id, season, language } => {
                LookupOutput::Season(capstan_tmdb::catalog::season(tmdb_id, season, language.as_deref())?)
            }
            LookupInput::ExternalIds { kind, tmdb_id } => actions::external_ids(kind, tmdb_id)?,
        };
        Ok(Outcome::Succeeded(output))
    }
}

capstan_sdk::export_capability!(CatalogLookup);
