//! TMDB v3 for capabilities, over the host's `outbound-read` to the
//! operator-configured `tmdb` service (the host injects the credential;
//! nothing here sees it). [`client`] owns the wire shapes and the mapping
//! of TMDB's answers and the host's refusals into failures a user can act
//! on, [`catalog`] the requests (search, details, external ids), [`output`]
//! the answers as capabilities return them.

pub mod catalog;
pub mod client;
pub mod output;

use serde::Deserialize;

/// Which catalogues a search covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SearchKind {
    Movie,
    Tv,
    #[default]
    Both,
}

/// A movie or a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MediaKind {
    Movie,
    Tv,
}

impl MediaKind {
    /// The TMDB path segment (`movie`, `tv`).
    pub fn path_segment(self) -> &'static str {
        match self {
            MediaKind::Movie => "movie",
            MediaKind::Tv => "tv",
        }
    }

    /// How a user would name one, for messages.
    pub fn noun(self) -> &'static str {
        match self {
            MediaKind::Movie => "movie",
            MediaKind::Tv => "series",
        }
    }
}

/// Default number of search results.
pub const DEFAULT_LIMIT: u8 = 10;
/// TMDB answers 20 results a page; one page is all a lookup reads.
pub const MAX_LIMIT: u8 = 20;
