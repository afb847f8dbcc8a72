//! What `release.search` answers: merged releases, best-seeded first, and
//! one report per indexer tried, failures included.

use serde::Serialize;

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SearchOutput {
    /// Releases after merging duplicates across indexers, most seeders first.
    pub releases: Vec<Release>,
    /// Releases found before `limit` was applied (after merging).
    pub total: usize,
    /// One entry per configured indexer that was tried.
    pub indexers: Vec<IndexerReport>,
}

/// One release (torrent).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Release {
    pub title: String,
    /// The indexer services that listed this release.
    pub indexers: Vec<String>,
    /// Total size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seeders: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leechers: Option<u32>,
    /// Seeders plus leechers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<u32>,
    /// BitTorrent v1 info-hash, 40 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infohash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub magnet_url: Option<String>,
    /// Where the `.torrent` file can be fetched (often through the indexer
    /// proxy, which holds the key itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// The release's page on the tracker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details_url: Option<String>,
    /// Torznab category ids, e.g. `[2000, 2045]`.
    pub categories: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imdb_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmdb_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tvdb_id: Option<u64>,
    /// Publication time, RFC 3339 UTC when the feed's date could be read,
    /// otherwise as the feed wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// Share of the size counted against the account's ratio: 0 is
    /// freeleech, 1 normal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download_volume_factor: Option<f64>,
    /// Upload credit multiplier: 2 is double upload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_volume_factor: Option<f64>,
}

/// How one indexer's search went.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IndexerReport {
    /// The indexer service name (`torznab`, `torznab-2`, ...).
    pub indexer: String,
    /// The Torznab function used: `movie`, `tvsearch` or `search`; absent
    /// when the indexer failed before searching.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The parameters the search was narrowed by (`imdbid`, `q`, `season`...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searched_by: Vec<String>,
    /// Releases this indexer returned, before merging.
    pub results: usize,
    /// Why this indexer gave nothing, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
