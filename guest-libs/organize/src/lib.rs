//! `capstan-organize`: the logic `organize.plan` and `organize.execute`
//! share, so the plan a human approved and the plan execute recomputes can
//! never be worked out two different ways.
//!
//! [`content`] picks the media files of a download under the `downloads`
//! root, [`subject`] reads what the download is (entity, slot, release)
//! from the domain store, [`episodes`] reads episode numbers from file
//! names, [`naming`] turns a Sonarr/Radarr-style template into a safe path
//! under the `library` root, and [`plan`] puts them together into items.

pub mod content;
pub mod episodes;
pub mod naming;
pub mod plan;
pub mod subject;

use serde::{Deserialize, Serialize};

/// The root finished downloads are read from.
pub const DOWNLOADS: &str = "downloads";
/// The root organized media is placed under.
pub const LIBRARY: &str = "library";

/// How a file is put into the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A second name for the same file: no extra space, the download keeps
    /// seeding. Falls back to a verified copy across devices.
    Hardlink,
    /// An independent copy, verified by SHA-256.
    Copy,
    /// The file leaves the downloads folder (seeding stops).
    Move,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hardlink => "hardlink",
            Mode::Copy => "copy",
            Mode::Move => "move",
        }
    }

    /// Parses a mode as written in a setting or a stored plan.
    pub fn parse(text: &str) -> Option<Mode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "hardlink" => Some(Mode::Hardlink),
            "copy" => Some(Mode::Copy),
            "move" => Some(Mode::Move),
            _ => None,
        }
    }
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
}
