//! What a caller may ask `release.search`, and the checks that refuse a
//! request no indexer could answer before anything is sent.

use capstan_sdk::Failure;
use serde::Deserialize;

use crate::rss::FEED_SERVICES;
use crate::{INDEXER_SERVICES, SERVICES};

/// One search across the configured indexers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// Free-text title words, e.g. `Dune Part Two`. Needed unless an id is
    /// given; indexers that cannot search by id fall back to it.
    #[serde(default)]
    pub query: Option<String>,
    /// `movie`, `tv` or `any` (default). Decides the Torznab search function
    /// and the default category.
    #[serde(default)]
    pub kind: Kind,
    /// IMDb id, `tt` followed by digits.
    #[serde(default)]
    pub imdb_id: Option<String>,
    /// TMDB id, as `catalog.lookup` returns it.
    #[serde(default)]
    pub tmdb_id: Option<u64>,
    /// TheTVDB id of a series.
    #[serde(default)]
    pub tvdb_id: Option<u64>,
    /// Season number (series only).
    #[serde(default)]
    pub season: Option<u32>,
    /// Episode number within `season` (series only).
    #[serde(default)]
    pub episode: Option<u32>,
    /// Torznab category ids, e.g. `[2040, 2045]`. Default: 2000 for movies,
    /// 5000 for series, none for `any`.
    #[serde(default)]
    pub categories: Vec<u32>,
    /// Only these indexer services (`torznab`, `torznab-2`, ...; with
    /// `recent`, the RSS feeds `rss`, `rss-2`, `rss-3` too). Default: every
    /// configured one.
    #[serde(default)]
    pub indexers: Vec<String>,
    /// Most releases to return after merging, 1 to 200 (default 50).
    #[serde(default)]
    pub limit: Option<u16>,
    /// The indexers' newest releases, whatever they are: their RSS feed
    /// (Torznab `t=search` with no query), and the RSS feeds' items. Takes no query, id, season or
    /// episode; `kind` still picks the default category.
    #[serde(default)]
    pub recent: bool,
}

/// What is being searched for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Movie,
    Tv,
    #[default]
    Any,
}

/// Default number of releases returned.
pub const DEFAULT_LIMIT: u16 = 50;
/// Largest `limit` accepted.
pub const MAX_LIMIT: u16 = 200;

impl SearchInput {
    /// The query with surrounding blanks removed, when there is one.
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref().map(str::trim).filter(|q| !q.is_empty())
    }

    /// The IMDb id's digits, which is how Torznab's `imdbid` wants it.
    pub fn imdb_digits(&self) -> Option<&str> {
        self.imdb_id.as_deref().map(|id| id.trim().trim_start_matches("tt"))
    }

    /// Whether any catalogue id was given.
    pub fn has_id(&self) -> bool {
        self.imdb_id.is_some() || self.tmdb_id.is_some() || self.tvdb_id.is_some()
    }

    /// Refuses what no indexer could answer, with the reason.
    pub fn validate(&self) -> Result<(), Failure> {
        let bad = |m: String| Err(Failure::InvalidInput(m));
        if self.recent {
            if self.query.is_some() || self.has_id() || self.season.is_some() || self.episode.is_some() {
                return bad("recent lists the newest releases; it takes no query, id, season or episode".into());
            }
        } else if self.query().is_none() && !self.has_id() {
            return bad("give a query or an imdb_id, tmdb_id or tvdb_id to search for".into());
        }
        if let Some(q) = self.query()
            && q.chars().count() > 200
        {
            return bad("query is longer than 200 characters".into());
        }
        if let Some(id) = &self.imdb_id {
            let digits = id.trim().strip_prefix("tt").unwrap_or("");
            if digits.len() < 7 || digits.len() > 10 || !digits.chars().all(|c| c.is_ascii_digit()) {
                return bad(format!("imdb_id {id:?} is not an IMDb id like tt0133093"));
            }
        }
        if self.tmdb_id == Some(0) || self.tvdb_id == Some(0) {
            return bad("tmdb_id and tvdb_id must be positive".into());
        }
        let tv_only = self.season.is_some() || self.tvdb_id.is_some();
        if tv_only && self.kind == Kind::Movie {
            return bad("season, episode and tvdb_id only apply to series, not to kind movie".into());
        }
        if self.episode.is_some() && self.season.is_none() {
            return bad("episode needs a season".into());
        }
        if self.effective_kind() == Kind::Any && self.query().is_none() && !self.recent {
            // Ids are searched with the typed movie or tv functions, and a
            // TMDB id means different titles in the two catalogues.
            return bad("searching by id alone needs kind movie or tv".into());
        }
        if let Some(limit) = self.limit
            && !(1..=MAX_LIMIT).contains(&limit)
        {
            return bad(format!("limit must be between 1 and {MAX_LIMIT}, not {limit}"));
        }
        if self.categories.len() > 20 {
            return bad("at most 20 categories".into());
        }
        if let Some(unknown) = self.indexers.iter().find(|name| !SERVICES.contains(&name.as_str())) {
            return bad(format!("indexer {unknown:?} is not one of {}", SERVICES.join(", ")));
        }
        if !self.recent
            && let Some(feed) = self.indexers.iter().find(|name| FEED_SERVICES.contains(&name.as_str()))
        {
            return bad(format!("{feed} is an RSS feed: it lists its newest releases (recent) and cannot be searched"));
        }
        Ok(())
    }

    /// The kind the search really is: an `any` search with a season or a
    /// TVDB id is a series search.
    pub fn effective_kind(&self) -> Kind {
        match self.kind {
            Kind::Any if self.season.is_some() || self.tvdb_id.is_some() => Kind::Tv,
            kind => kind,
        }
    }

    /// Categories to send: the caller's, or the kind's top category.
    pub fn categories(&self) -> Vec<u32> {
        if !self.categories.is_empty() {
            return self.categories.clone();
        }
        match self.effective_kind() {
            Kind::Movie => vec![2000],
            Kind::Tv => vec![5000],
            Kind::Any => Vec::new(),
        }
    }

    /// The RSS feeds to read, in order: only for `recent`, which is all
    /// a feed can answer.
    pub fn wanted_feeds(&self) -> Vec<&'static str> {
        let feeds = FEED_SERVICES.iter().copied().filter(|_| self.recent);
        feeds.filter(|name| self.indexers.is_empty() || self.indexers.iter().any(|n| n == name)).collect()
    }

    /// The Torznab indexers to ask, in order.
    pub fn wanted_indexers(&self) -> Vec<&'static str> {
        INDEXER_SERVICES
            .iter()
            .copied()
            .filter(|name| self.indexers.is_empty() || self.indexers.iter().any(|n| n == name))
            .collect()
    }
}
