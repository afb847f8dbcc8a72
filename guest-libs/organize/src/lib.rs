//! `capstan-organize`: the logic `organize.plan` and `organize.execute`
//! share, so the plan a human approved and the plan execute recomputes can
//! never be worked out two different ways.
//!
//! [`content`] picks the media files of a download under the `downloads`
//! root, [`subject`] reads what the download is (entity, slot, release)
//! from the domain store, [`episodes`] reads episode numbers from file
//! names, [`naming`] turns a Sonarr/Radarr-style template into a safe path
//! under the `library` root, and [`plan`] puts them together into items.
//! [`carry`] carries a frozen plan out ([`frozen`] reads and re-checks it,
//! [`place`] puts each file in place, [`recycle`] keeps each file an
//! upgrade replaces): the body of `organize.execute` and `organize.replace`.

pub mod carry;
pub mod content;
pub mod episodes;
pub mod frozen;
pub mod naming;
pub mod place;
pub mod plan;
pub mod recycle;
pub mod subject;

use serde::{Deserialize, Serialize};

/// The root finished downloads are read from.
pub const DOWNLOADS: &str = "downloads";
/// The root organized media is placed under.
pub const LIBRARY: &str = "library";
/// The root replaced files are kept in (the host's `recycle` folder in its
/// data directory).
pub const RECYCLE: &str = "recycle";

pub use capstan_sdk::contract::status::OrganizeMode;

/// Reads a mode as written in a setting: its name, in any case, with
/// spaces around it.
pub fn parse_mode(text: &str) -> Option<OrganizeMode> {
    OrganizeMode::parse(&text.trim().to_ascii_lowercase()).ok()
}

/// One file to place: `source` under `downloads`, `destination` under
/// `library`, and the source's size when planned.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Item {
    /// Path under the `downloads` root.
    pub source: String,
    /// Path under the `library` root.
    pub destination: String,
    /// Size of the source in bytes when the plan was made.
    pub size: u64,
    /// The episodes the file holds (series only), so the import marks
    /// them as had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<EpisodeRef>,
    /// Files under `library` this one replaces (an upgrade): they go to the
    /// recycle folder, never deleted. Only files the slot holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

/// One episode of a series by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeRef {
    pub season: u32,
    pub episode: u32,
}
