//! Capability `release.search` (label read): searches the operator's Torznab
//! indexers (Jackett, Prowlarr, or a tracker's own Torznab endpoint) and
//! returns their releases merged and deduplicated by info-hash. With
//! `recent` it lists their newest releases instead, and reads the
//! operator's RSS feeds too ([`rss`]: a tracker's own feed URL, which is
//! read, never searched).
//!
//! Each indexer is an outbound service. A descriptor names its services up
//! front and the host refuses any other, so the component lists a small
//! fixed set ([`INDEXER_SERVICES`]) and uses whichever the operator
//! configured; the host answers `not-found` for the rest, which are skipped.
//!
//! [`input`] owns the request, [`torznab`] the protocol (caps, feed, errors),
//! [`plan`] what to ask each indexer, [`release`] reading an item,
//! [`merge`] deduplication, [`search`] the walk over indexers, [`rss`] the
//! feeds.

pub mod date;
pub mod infohash;
pub mod input;
pub mod merge;
pub mod output;
pub mod plan;
pub mod redact;
pub mod release;
pub mod rss;
pub mod search;
pub mod torznab;

#[cfg(test)]
mod tests;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};

use input::SearchInput;
use output::SearchOutput;

/// The indexer services this component may use, in the order searched.
pub const INDEXER_SERVICES: &[&str] = &["torznab", "torznab-2", "torznab-3"];

/// Every service the descriptor names: the indexers, then the RSS feeds.
pub const SERVICES: &[&str] = &["torznab", "torznab-2", "torznab-3", "rss", "rss-2", "rss-3"];

/// The capability.
pub struct ReleaseSearch;

impl Capability for ReleaseSearch {
    type Input = SearchInput;
    type Output = SearchOutput;

    const META: Meta = Meta {
        id: "release.search",
        version: 2,
        label: Label::Read,
        summary: "Search Torznab indexers for releases of a movie or episode, merged and deduplicated",
        description: "Searches every configured Torznab indexer (services torznab, torznab-2, torznab-3) by title or by IMDb/TMDB/TVDB id, season and episode, using the indexer's typed movie/tv search when its caps support those parameters and a text search otherwise; or, with recent, lists each indexer's newest releases (its RSS feed) and each configured RSS feed's items (services rss, rss-2, rss-3: a tracker's feed URL, read but never searched). Releases seen on several indexers are merged by info-hash, keeping the best-seeded listing. Returns title, size, seeders, peers, info-hash, magnet and download links, categories and ids, most seeders first, with a report per indexer; one indexer failing does not fail the search. Use catalog.lookup first to get the ids, release.inspect to read a release name.",
        tags: &["release", "search", "torznab", "indexer", "torrent"],
        aliases: &[
            "find release",
            "search torrents",
            "search indexers",
            "find torrent",
            "搜索资源",
            "找种子",
            "搜种",
            "搜索种子",
        ],
        replay: Replay::Safe,
        services: SERVICES,
    };

    fn invoke(input: SearchInput) -> Result<Outcome<SearchOutput>, Failure> {
        input.validate()?;
        Ok(Outcome::Succeeded(search::run(&input)?))
    }
}

capstan_sdk::export_capability!(ReleaseSearch);
